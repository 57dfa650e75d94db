/* cfareg.S — functions whose CFA is not sp or fp + offset, as OpenSSL's assembly has them,
 * each spinning in its own frame and in a callee (cfareg_mix, an ordinary frame that keeps
 * rax) `rounds` times and returning a checksum; rsp aligned down and rbp used as data:
 *   cfareg_work(rounds): the CFA in another register, as AES-GCM has it (aesni_gcm_encrypt:
 *     `lea (%rsp),%rax; .cfi_def_cfa_register %rax`);
 *   cfaexpr_work(rounds): the CFA a DWARF expression reading the caller's rsp from the frame,
 *     as SHA, AES and bignum code has it (sha256_block_data_order: `mov %rsp,%rax`, rax saved
 *     at 40(%rsp) once rsp is aligned, then `DW_CFA_def_cfa_expression: DW_OP_breg7 (rsp) 40;
 *     DW_OP_deref; DW_OP_plus_uconst 8`), rax used as data too.
 * Built by tests/e2e-unwind-cfareg.sh with cfareg.c. x86_64 only (the test skips elsewhere). */
#if defined(__x86_64__)
/* The callee-saved registers pushed below the CFA (rbx, rbp, r12), rsp aligned down. */
.macro	save_and_align
	push	%rbx
	.cfi_offset %rbx,-16
	push	%rbp
	.cfi_offset %rbp,-24
	push	%r12
	.cfi_offset %r12,-32
	sub	$128,%rsp
	and	$-64,%rsp
.endm

/* The callee-saved registers back from below the caller's rsp in `base`, rsp back, the
 * checksum in rax. */
.macro	restore_from base
	mov	-24(\base),%r12
	.cfi_restore %r12
	mov	-16(\base),%rbp
	.cfi_restore %rbp
	mov	-8(\base),%rbx
	.cfi_restore %rbx
	lea	(\base),%rsp
	.cfi_def_cfa_register %rsp
	mov	%rdx,%rax
.endm

/* rbx rounds of a spin in the frame, each with a call to cfareg_mix; the checksum in rdx. */
.macro	spin_rounds keep_rax
	mov	%rdi,%rbx
	mov	%rdi,%rbp
	movabs	$0x9e3779b97f4a7c15,%r12
2:	mov	$3000,%ecx
3:	imul	%r12,%rbp
	add	%rcx,%rbp
.if \keep_rax == 0
	mov	%rbp,%rax
.endif
	dec	%ecx
	jnz	3b
	call	cfareg_mix
	dec	%rbx
	jnz	2b
	mov	%rbp,%rdx
.endm

	.text
	.p2align 4
	.type	cfareg_mix,@function
cfareg_mix:
	.cfi_startproc
	mov	$3000,%ecx
1:	imul	%r12,%rbp
	add	%rcx,%rbp
	dec	%ecx
	jnz	1b
	ret
	.cfi_endproc
	.size	cfareg_mix,.-cfareg_mix

	.globl	cfareg_work
	.p2align 4
	.type	cfareg_work,@function
cfareg_work:
	.cfi_startproc
	lea	(%rsp),%rax
	.cfi_def_cfa_register %rax
	save_and_align
	spin_rounds 1
	restore_from %rax
	ret
	.cfi_endproc
	.size	cfareg_work,.-cfareg_work

	.globl	cfaexpr_work
	.p2align 4
	.type	cfaexpr_work,@function
cfaexpr_work:
	.cfi_startproc
	mov	%rsp,%rax
	.cfi_def_cfa_register %rax
	save_and_align
	mov	%rax,40(%rsp)
	/* DW_CFA_def_cfa_expression, 5 bytes: DW_OP_breg7 40; DW_OP_deref; DW_OP_plus_uconst 8 */
	.cfi_escape 0x0f,0x05,0x77,0x28,0x06,0x23,0x08
	spin_rounds 0
	mov	40(%rsp),%rsi
	.cfi_def_cfa %rsi,8
	restore_from %rsi
	ret
	.cfi_endproc
	.size	cfaexpr_work,.-cfaexpr_work
#endif
	.section .note.GNU-stack,"",@progbits
