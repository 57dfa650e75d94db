/* cfareg.S — a function whose CFA is in another register, as OpenSSL's AES-GCM code has it
 * (aesni_gcm_encrypt: `lea (%rsp),%rax; .cfi_def_cfa_register %rax`, then rsp aligned down
 * and rbp used as data): cfareg_work(rounds) spins in its own frame and in a callee
 * (cfareg_mix, an ordinary frame that keeps rax) `rounds` times; returns a checksum. Built by
 * tests/e2e-unwind-cfareg.sh with cfareg.c. x86_64 only (the test skips elsewhere). */
#if defined(__x86_64__)
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
	push	%rbx
	.cfi_offset %rbx,-16
	push	%rbp
	.cfi_offset %rbp,-24
	push	%r12
	.cfi_offset %r12,-32
	sub	$128,%rsp
	and	$-64,%rsp
	mov	%rdi,%rbx
	mov	%rdi,%rbp
	movabs	$0x9e3779b97f4a7c15,%r12
2:	mov	$3000,%ecx
3:	imul	%r12,%rbp
	add	%rcx,%rbp
	dec	%ecx
	jnz	3b
	call	cfareg_mix
	dec	%rbx
	jnz	2b
	mov	%rbp,%rdx
	mov	-24(%rax),%r12
	.cfi_restore %r12
	mov	-16(%rax),%rbp
	.cfi_restore %rbp
	mov	-8(%rax),%rbx
	.cfi_restore %rbx
	lea	(%rax),%rsp
	.cfi_def_cfa_register %rsp
	mov	%rdx,%rax
	ret
	.cfi_endproc
	.size	cfareg_work,.-cfareg_work
#endif
	.section .note.GNU-stack,"",@progbits
