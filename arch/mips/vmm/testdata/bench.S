/* The interpreter's speed benchmark: a kernel loop of ALU ops, loads, stores and a
 * branch (a0 = boot-info magic on entry), 10 million iterations of 8 instructions,
 * then exit 0 through the hypercall window. */
        .set    noreorder
        .text
        .globl  _start
_start:
        bnez    $a2, 2f                 /* other cores wait */
        nop
        la      $s0, scratch
        li      $s1, 10000000
        move    $t0, $zero
1:      lw      $t1, 0($s0)
        addu    $t0, $t0, $s1
        xor     $t2, $t0, $t1
        sw      $t2, 4($s0)
        sll     $t3, $t2, 3
        addiu   $s1, $s1, -1
        bnez    $s1, 1b
        sw      $t3, 0($s0)
        la      $t0, hc_exit
        li      $t1, 0x1fffffff
        and     $t0, $t0, $t1
        lui     $t1, 0xbf10
        sw      $t0, 8($t1)
2:      wait
        b       2b
        nop
        .data
        .align  3
hc_exit:    .word 0, 0
scratch:    .word 0, 0
