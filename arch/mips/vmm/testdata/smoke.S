/* A freestanding MIPS32r2 test kernel for the interpreter's machine test: its own
 * exception vectors (EBase), a TLB mapping, a user program reached by eret that makes
 * syscalls, a fault in a branch delay slot, a timer interrupt, console output and
 * exit through the hypercall window. Exits with status 0 when every check passed,
 * else with the number of the check that failed. */
        .set    noreorder
        .set    noat
        .text
        .globl  _start
        .ent    _start
_start:
        /* a0 = boot-info magic, a2 = core, a3 = cores */
        li      $t0, 0x73766269
        bne     $a0, $t0, fail
        li      $v0, 1
        bnez    $a2, secondary
        nop
        la      $t0, vectors
        mtc0    $t0, $15, 1             /* EBase */
        ehb
        la      $a0, msg_boot
        jal     puts
        li      $a1, 5

        /* Check 2: a load fault in a delay slot: the handler sees BD and EPC. */
        la      $s7, expect_bd
        li      $t0, 1
        sw      $t0, 0($s7)
bd_branch:
        beq     $zero, $zero, 1f
        lw      $t1, 1($zero)           /* AdEL in the delay slot */
1:      lw      $t0, 0($s7)
        li      $v0, 2
        bnez    $t0, fail               /* the handler clears expect_bd */
        nop

        /* Map user VA 0x00400000 (even page) to user_page, ASID 1, valid and dirty. */
        li      $t0, 0x00400001
        mtc0    $t0, $10                /* EntryHi */
        la      $t1, user_page
        li      $t2, 0x1fffffff
        and     $t1, $t1, $t2
        srl     $t1, $t1, 12
        sll     $t1, $t1, 6
        ori     $t1, $t1, 0x6           /* D | V */
        mtc0    $t1, $2                 /* EntryLo0 */
        mtc0    $zero, $3               /* EntryLo1: invalid */
        mtc0    $zero, $5               /* PageMask: 4 KiB */
        mtc0    $zero, $0               /* Index 0 */
        ehb
        tlbwi
        ehb

        /* Into user mode at 0x00400000 with eret. */
        li      $t0, 0x00400000
        mtc0    $t0, $14                /* EPC */
        li      $t0, 0x10000012         /* CU0 | KSU=user | EXL */
        mtc0    $t0, $12
        ehb
        eret
        .end    _start

secondary:
        wait
        b       secondary
        nop

/* puts(a0 = string, a1 = length) through the console_write hypercall. */
puts:
        la      $t0, hc_console
        li      $t1, 0x1fffffff
        and     $t2, $a0, $t1
        sw      $t2, 0($t0)             /* data_gpa (low word) */
        sw      $zero, 4($t0)
        sw      $a1, 8($t0)             /* len */
        sw      $zero, 12($t0)
        and     $t0, $t0, $t1
        lui     $t1, 0xbf10
        jr      $ra
        sw      $t0, 4($t1)             /* hypercall 1, in the delay slot */

/* exit(v0) */
fail:
exit:
        la      $t0, hc_exit
        sw      $v0, 0($t0)
        sw      $zero, 4($t0)
        li      $t1, 0x1fffffff
        and     $t0, $t0, $t1
        lui     $t1, 0xbf10
        sw      $t0, 8($t1)             /* hypercall 2 */
1:      b       1b
        nop

/* Kernel side of syscalls: v0 = 1 counts, v0 = 2 checks and exits, v0 = 3 runs
 * the timer check. */
syscall_handler:
        li      $k1, 1
        beq     $v0, $k1, sys_count
        li      $k1, 2
        beq     $v0, $k1, sys_done
        li      $k1, 3
        beq     $v0, $k1, sys_timer
        nop
        li      $v0, 10
        b       fail
        nop
sys_count:
        la      $k0, syscalls
        lw      $k1, 0($k0)
        addiu   $k1, $k1, 1
        sw      $k1, 0($k0)
        b       sys_return
        nop
sys_timer:
        /* Check 6: with interrupts on, Count reaches Compare and IP7 comes. The
         * interrupt overwrites EPC: keep the syscall's. */
        mfc0    $k0, $14
        la      $k1, saved_epc
        sw      $k0, 0($k1)
        mtc0    $zero, $9               /* Count = 0 */
        li      $k0, 50
        mtc0    $k0, $11                /* Compare = 50 */
        li      $k0, 0x10008001         /* CU0 | IM7 | IE (EXL cleared: kernel mode) */
        mtc0    $k0, $12
        ehb
        la      $k0, ticks
1:      lw      $k1, 0($k0)
        beqz    $k1, 1b
        nop
        di
        ehb
        li      $k0, 0x10000012         /* back: CU0 | user | EXL */
        mtc0    $k0, $12
        la      $k1, saved_epc
        lw      $k0, 0($k1)
        mtc0    $k0, $14
        ehb
        b       sys_return
        nop
sys_done:
        la      $k0, syscalls
        lw      $k1, 0($k0)
        li      $v0, 3
        li      $k0, 100
        bne     $k1, $k0, fail          /* check 3: 100 syscalls counted */
        nop
        li      $v0, 4
        bne     $a0, $k0, fail          /* check 4: the user loop's own count */
        nop
        la      $a0, msg_done
        jal     puts
        li      $a1, 5
        li      $v0, 0
        b       exit
        nop
sys_return:
        mfc0    $k0, $14
        addiu   $k0, $k0, 4
        mtc0    $k0, $14
        ehb
        eret

        .align  12
vectors:
        /* EBase + 0x000: TLB refill. Nothing here should miss: check 7. */
        li      $v0, 7
        b       fail
        nop
        .org    vectors + 0x180
        /* EBase + 0x180: everything else. */
        mfc0    $k0, $13                /* Cause */
        srl     $k1, $k0, 2
        andi    $k1, $k1, 31
        li      $v1, 8
        beq     $k1, $v1, syscall_handler
        nop
        beqz    $k1, interrupt
        nop
        li      $v1, 4
        bne     $k1, $v1, unexpected
        nop
        /* AdEL: the delay-slot check. BD set, EPC at the branch. */
        li      $v0, 5
        bgez    $k0, fail               /* BD is bit 31 */
        nop
        mfc0    $k0, $14
        la      $k1, bd_branch
        bne     $k0, $k1, fail
        nop
        la      $k0, expect_bd
        sw      $zero, 0($k0)
        la      $k0, 1f                 /* resume past the branch and its slot */
        mtc0    $k0, $14
        ehb
        eret
1:      j       bd_resume
        nop
unexpected:
        li      $v0, 8
        b       fail
        nop
interrupt:
        li      $k1, 0x8000             /* IP7: the timer */
        and     $k1, $k0, $k1
        li      $v0, 9
        beqz    $k1, fail
        nop
        la      $k0, ticks
        li      $k1, 1
        sw      $k1, 0($k0)
        li      $k0, 1000000
        mtc0    $k0, $11                /* Compare far away: acknowledges */
        ehb
        eret

bd_resume:
        /* Continue the kernel after the delay-slot check (label 1 in _start). */
        la      $t0, bd_branch
        addiu   $t0, $t0, 8
        jr      $t0
        nop

        .align  12
user_page:
        /* User mode at VA 0x00400000: 100 syscalls, the timer check, then done. */
        li      $s0, 0
        li      $s1, 100
2:      li      $v0, 1
        syscall
        addiu   $s0, $s0, 1
        bne     $s0, $s1, 2b
        nop
        li      $v0, 3
        syscall
        move    $a0, $s0
        li      $v0, 2
        syscall
3:      b       3b
        nop

        .data
        .align  12
msg_boot:   .ascii  "boot\n"
msg_done:   .ascii  "done\n"
        .align  3
hc_console: .space  16
hc_exit:    .space  8
expect_bd:  .word   0
syscalls:   .word   0
ticks:      .word   0
saved_epc:  .word   0
