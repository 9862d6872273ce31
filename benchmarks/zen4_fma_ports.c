/* Which vector instructions share Zen 4's two FMA pipes (issue #10, eighth
 * round, k32f8): a loop of 12 independent 256-bit FMAs (6 cycles on the two
 * FMA pipes) plus 4 independent instructions of one kind; the time against
 * the FMAs alone tells whether that kind takes FMA slots (ratio ~1.33: it
 * does, as much as another FMA would; ~1.00: it issues beside them).  The
 * kernels' bookkeeping (kmeans_cv_impl.h) was chosen from this table.  The
 * rows whose destination is also a source (fma, permt2ps: a dependency
 * chain) measure latency, not the port; "permt2ps x4 dest" rotates four
 * destinations.  Timing run: take the lock like any other benchmark.
 *
 *   gcc -O2 -mavx512f -mavx512vl -mavx512bw -mavx512dq -mfma \
 *       benchmarks/zen4_fma_ports.c -o /tmp/zen4_fma_ports
 *   flock /work/bench.lock /tmp/zen4_fma_ports
 */
#include <stdio.h>
#include <time.h>
float sbuf[64] __attribute__((aligned(64)));
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
#define FMA12 "vfmadd231ps %%ymm13,%%ymm14,%%ymm0\n vfmadd231ps %%ymm13,%%ymm14,%%ymm1\n vfmadd231ps %%ymm13,%%ymm14,%%ymm2\n vfmadd231ps %%ymm13,%%ymm14,%%ymm3\n vfmadd231ps %%ymm13,%%ymm14,%%ymm4\n vfmadd231ps %%ymm13,%%ymm14,%%ymm5\n vfmadd231ps %%ymm13,%%ymm14,%%ymm6\n vfmadd231ps %%ymm13,%%ymm14,%%ymm7\n vfmadd231ps %%ymm13,%%ymm14,%%ymm8\n vfmadd231ps %%ymm13,%%ymm14,%%ymm9\n vfmadd231ps %%ymm13,%%ymm14,%%ymm10\n vfmadd231ps %%ymm13,%%ymm14,%%ymm11\n"
#define T(name, label, ops) static double name(long n){ double t0=now(); for(long i=0;i<n;++i){ __asm__ volatile(FMA12 ops ::: "xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm12","xmm15","xmm16","xmm17","xmm18","xmm19","k1","k2","k3","eax","ecx","edx");} return (now()-t0)/n*1e9;}
#define X4(s) s s s s
/* Each kind once: its function, its name in the output (in this order), and
 * the 4 instructions timed beside the FMAs. */
#define KINDS(X) \
    X(t_none, "none", "") \
    X(t_pt2, "permt2ps x4 dest", "vpermt2ps %%ymm13,%%ymm14,%%ymm12\n vpermt2ps %%ymm13,%%ymm14,%%ymm15\n vpermt2ps %%ymm13,%%ymm14,%%ymm16\n vpermt2ps %%ymm13,%%ymm14,%%ymm17\n") \
    X(t_pblendvb, "pblendvb", X4("vpblendvb %%ymm15,%%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_psubd, "psubd", X4("vpsubd %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_paddd, "paddd", X4("vpaddd %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_cmplt, "cmpltps", X4("vcmpltps %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_cvtld, "cvtps2pd mem", X4("vcvtps2pd (%%rsp),%%ymm12\n")) \
    X(t_addsd, "addsd", X4("vaddsd %%xmm13,%%xmm14,%%xmm12\n")) \
    X(t_pmovmskb, "pmovmskb", X4("vpmovmskb %%ymm13,%%eax\n")) \
    X(t_pmovd2m, "pmovd2m", X4("vpmovd2m %%ymm13,%%k1\n")) \
    X(t_ptestm, "ptestmd", X4("vptestmd %%ymm13,%%ymm14,%%k1\n")) \
    X(t_movd, "vmovd->r", X4("vmovd %%xmm13,%%eax\n")) \
    X(t_pextrd, "pextrd", X4("vpextrd $1,%%xmm13,%%eax\n")) \
    X(t_movss_st, "movss-store", X4("vmovss %%xmm13,sbuf(%%rip)\n")) \
    X(t_packss, "packssdw", X4("vpackssdw %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_pshufd, "pshufd", X4("vpshufd $0x4e,%%ymm13,%%ymm12\n")) \
    X(t_extr128, "extracti128", X4("vextracti128 $1,%%ymm13,%%xmm12\n")) \
    X(t_cmpneq, "cmpneqps", X4("vcmpneqps %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_por, "por", X4("vpor %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_movaps, "movaps rr", X4("vmovaps %%ymm13,%%ymm12\n")) \
    X(t_store, "ymm store", X4("vmovaps %%ymm13,sbuf+64(%%rip)\n")) \
    X(t_minps, "minps", X4("vminps %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_vmaxps, "vmaxps", X4("vmaxps %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_cmpps, "cmpps", X4("vcmpeqps %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_cmpk, "cmpps->k", X4("vcmpeqps %%ymm13,%%ymm14,%%k1\n")) \
    X(t_pcmpd, "pcmpeqd", X4("vpcmpeqd %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_pcmpk, "pcmpeqd->k", X4("vpcmpeqd %%ymm13,%%ymm14,%%k1\n")) \
    X(t_pminsd, "pminsd", X4("vpminsd %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_vpminud, "pminud", X4("vpminud %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_addps, "addps", X4("vaddps %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_permil, "permilps", X4("vpermilps $0x4e,%%ymm13,%%ymm12\n")) \
    X(t_permps, "permps", X4("vpermps %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_perm2f, "perm2f128", X4("vperm2f128 $1,%%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_shufps, "shufps", X4("vshufps $0x4e,%%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_vpermt2, "permt2ps", X4("vpermt2ps %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_movmsk, "movmskps", X4("vmovmskps %%ymm13,%%eax\n")) \
    X(t_kmov, "kmovd", X4("kmovd %%k2,%%eax\n")) \
    X(t_kunpck, "kunpckbw", X4("kunpckbw %%k2,%%k3,%%k1\n")) \
    X(t_pand, "pand", X4("vpand %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_pxor, "pxor", X4("vpxor %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_psrad, "psrad", X4("vpsrad $31,%%ymm13,%%ymm12\n")) \
    X(t_tern, "ternlog", X4("vpternlogd $0xca,%%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_blendv, "blendvps", X4("vblendvps %%ymm15,%%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_pblendm, "pblendmd", X4("vpblendmd %%ymm13,%%ymm14,%%ymm12%{%%k2%}\n")) \
    X(t_cvtpd, "cvtps2pd", X4("vcvtps2pd %%xmm13,%%ymm12\n")) \
    X(t_addpd, "addpd", X4("vaddpd %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_fmadd2, "fma", X4("vfmadd231ps %%ymm13,%%ymm14,%%ymm12\n")) \
    X(t_bcast, "bcast-load", X4("vbroadcastss (%%rsp),%%ymm12\n"))
KINDS(T)
#define ENTRY(name, label, ops) {label, name},
int main(void){
  long n=20000000;
  struct {const char*nm; double(*f)(long);} L[]={KINDS(ENTRY)};
  t_none(n);
  double base=0; for(int r=0;r<3;++r){double b=t_none(n); if(!r||b<base)base=b;}
  for(unsigned i=0;i<sizeof L/sizeof L[0];++i){double b=1e9; for(int r=0;r<3;++r){double t=L[i].f(n); if(t<b)b=t;} printf("%-12s %.3f ns/it  ratio %.3f \n",L[i].nm,b,b/base);}
}
