/* A 32-bit ELF with no Multiboot header: sigvisor refuses it clearly. */
	.text
	.globl	_start
_start:
	hlt
