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
#define T(name, ops) static double name(long n){ double t0=now(); for(long i=0;i<n;++i){ __asm__ volatile(FMA12 ops ::: "xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm12","xmm15","xmm16","xmm17","xmm18","xmm19","k1","k2","k3","eax","ecx","edx");} return (now()-t0)/n*1e9;}
#define X4(s) s s s s
T(t_none, "")
T(t_minps, X4("vminps %%ymm13,%%ymm14,%%ymm12\n"))
T(t_cmpps, X4("vcmpeqps %%ymm13,%%ymm14,%%ymm12\n"))
T(t_cmpk, X4("vcmpeqps %%ymm13,%%ymm14,%%k1\n"))
T(t_pcmpd, X4("vpcmpeqd %%ymm13,%%ymm14,%%ymm12\n"))
T(t_pcmpk, X4("vpcmpeqd %%ymm13,%%ymm14,%%k1\n"))
T(t_pminsd, X4("vpminsd %%ymm13,%%ymm14,%%ymm12\n"))
T(t_addps, X4("vaddps %%ymm13,%%ymm14,%%ymm12\n"))
T(t_permil, X4("vpermilps $0x4e,%%ymm13,%%ymm12\n"))
T(t_permps, X4("vpermps %%ymm13,%%ymm14,%%ymm12\n"))
T(t_perm2f, X4("vperm2f128 $1,%%ymm13,%%ymm14,%%ymm12\n"))
T(t_shufps, X4("vshufps $0x4e,%%ymm13,%%ymm14,%%ymm12\n"))
T(t_movmsk, X4("vmovmskps %%ymm13,%%eax\n"))
T(t_kmov, X4("kmovd %%k2,%%eax\n"))
T(t_kunpck, X4("kunpckbw %%k2,%%k3,%%k1\n"))
T(t_pand, X4("vpand %%ymm13,%%ymm14,%%ymm12\n"))
T(t_tern, X4("vpternlogd $0xca,%%ymm13,%%ymm14,%%ymm12\n"))
T(t_blendv, X4("vblendvps %%ymm15,%%ymm13,%%ymm14,%%ymm12\n"))
T(t_pblendm, X4("vpblendmd %%ymm13,%%ymm14,%%ymm12%{%%k2%}\n"))
T(t_vmaxps, X4("vmaxps %%ymm13,%%ymm14,%%ymm12\n"))
T(t_cvtpd, X4("vcvtps2pd %%xmm13,%%ymm12\n"))
T(t_addpd, X4("vaddpd %%ymm13,%%ymm14,%%ymm12\n"))
T(t_fmadd2, X4("vfmadd231ps %%ymm13,%%ymm14,%%ymm12\n"))
T(t_vpermt2, X4("vpermt2ps %%ymm13,%%ymm14,%%ymm12\n"))
T(t_vpminud, X4("vpminud %%ymm13,%%ymm14,%%ymm12\n"))
T(t_psrad, X4("vpsrad $31,%%ymm13,%%ymm12\n"))
T(t_pxor, X4("vpxor %%ymm13,%%ymm14,%%ymm12\n"))
T(t_bcast, X4("vbroadcastss (%%rsp),%%ymm12\n"))
T(t_pmovmskb, X4("vpmovmskb %%ymm13,%%eax\n"))
T(t_pmovd2m, X4("vpmovd2m %%ymm13,%%k1\n"))
T(t_ptestm, X4("vptestmd %%ymm13,%%ymm14,%%k1\n"))
T(t_movd, X4("vmovd %%xmm13,%%eax\n"))
T(t_pextrd, X4("vpextrd $1,%%xmm13,%%eax\n"))
T(t_movss_st, X4("vmovss %%xmm13,sbuf(%%rip)\n"))
T(t_packss, X4("vpackssdw %%ymm13,%%ymm14,%%ymm12\n"))
T(t_pshufd, X4("vpshufd $0x4e,%%ymm13,%%ymm12\n"))
T(t_extr128, X4("vextracti128 $1,%%ymm13,%%xmm12\n"))
T(t_cmpneq, X4("vcmpneqps %%ymm13,%%ymm14,%%ymm12\n"))
T(t_por, X4("vpor %%ymm13,%%ymm14,%%ymm12\n"))
T(t_movaps, X4("vmovaps %%ymm13,%%ymm12\n"))
T(t_store, X4("vmovaps %%ymm13,sbuf+64(%%rip)\n"))
T(t_pt2, "vpermt2ps %%ymm13,%%ymm14,%%ymm12\n vpermt2ps %%ymm13,%%ymm14,%%ymm15\n vpermt2ps %%ymm13,%%ymm14,%%ymm16\n vpermt2ps %%ymm13,%%ymm14,%%ymm17\n")
T(t_pblendvb, X4("vpblendvb %%ymm15,%%ymm13,%%ymm14,%%ymm12\n"))
T(t_psubd, X4("vpsubd %%ymm13,%%ymm14,%%ymm12\n"))
T(t_paddd, X4("vpaddd %%ymm13,%%ymm14,%%ymm12\n"))
T(t_cmplt, X4("vcmpltps %%ymm13,%%ymm14,%%ymm12\n"))
T(t_cvtld, X4("vcvtps2pd (%%rsp),%%ymm12\n"))
T(t_addsd, X4("vaddsd %%xmm13,%%xmm14,%%xmm12\n"))
int main(void){
  long n=20000000;
  struct {const char*nm; double(*f)(long);} L[]={{"none",t_none},{"permt2ps x4 dest",t_pt2},{"pblendvb",t_pblendvb},{"psubd",t_psubd},{"paddd",t_paddd},{"cmpltps",t_cmplt},{"cvtps2pd mem",t_cvtld},{"addsd",t_addsd},{"pmovmskb",t_pmovmskb},{"pmovd2m",t_pmovd2m},{"ptestmd",t_ptestm},{"vmovd->r",t_movd},{"pextrd",t_pextrd},{"movss-store",t_movss_st},{"packssdw",t_packss},{"pshufd",t_pshufd},{"extracti128",t_extr128},{"cmpneqps",t_cmpneq},{"por",t_por},{"movaps rr",t_movaps},{"ymm store",t_store},{"minps",t_minps},{"vmaxps",t_vmaxps},{"cmpps",t_cmpps},{"cmpps->k",t_cmpk},{"pcmpeqd",t_pcmpd},{"pcmpeqd->k",t_pcmpk},{"pminsd",t_pminsd},{"pminud",t_vpminud},{"addps",t_addps},{"permilps",t_permil},{"permps",t_permps},{"perm2f128",t_perm2f},{"shufps",t_shufps},{"permt2ps",t_vpermt2},{"movmskps",t_movmsk},{"kmovd",t_kmov},{"kunpckbw",t_kunpck},{"pand",t_pand},{"pxor",t_pxor},{"psrad",t_psrad},{"ternlog",t_tern},{"blendvps",t_blendv},{"pblendmd",t_pblendm},{"cvtps2pd",t_cvtpd},{"addpd",t_addpd},{"fma",t_fmadd2},{"bcast-load",t_bcast}};
  t_none(n);
  double base=0; for(int r=0;r<3;++r){double b=t_none(n); if(!r||b<base)base=b;}
  for(unsigned i=0;i<sizeof L/sizeof L[0];++i){double b=1e9; for(int r=0;r<3;++r){double t=L[i].f(n); if(t<b)b=t;} printf("%-12s %.3f ns/it  ratio %.3f \n",L[i].nm,b,b/base);}
}
