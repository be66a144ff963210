// Throughput of the packed 16-bit operations on this GPU: warp instructions a clock per SM.
#include <cstdio>
#include <cuda_runtime.h>
#define N_ACC 8
#define ITERS 4096
__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned s){unsigned d; asm volatile("prmt.b32 %0,%1,%2,%3;":"=r"(d):"r"(a),"r"(b),"r"(s)); return d;}
template<int OP> __global__ void k(unsigned* out, unsigned x, unsigned y){
  unsigned a[N_ACC];
  #pragma unroll
  for(int i=0;i<N_ACC;i++) a[i]=threadIdx.x*7u+i*x;
  for(int it=0;it<ITERS;it++){
    #pragma unroll
    for(int i=0;i<N_ACC;i++){
      if(OP==0) a[i]=__viaddmax_s16x2(a[i],x,y+i);
      if(OP==1) a[i]=__vimax_s16x2_relu(a[i],y+i);
      if(OP==2) a[i]=__vimax3_s16x2_relu(a[i],x,y+i);
      if(OP==3) a[i]=__vadd2(a[i],x+i);
      if(OP==4) a[i]=prmt(a[i],x,0xC480u+i);
      if(OP==5) a[i]=__vmaxs2(a[i],y+i);
      if(OP==6) a[i]=a[i]+x+i;              // IADD3
      if(OP==7) { a[i]=__viaddmax_s16x2(a[i],x,y+i); a[i]=__vadd2(a[i],x+i); }
      if(OP==8) { a[i]=__viaddmax_s16x2(a[i],x,y+i); a[i]=prmt(a[i],x,0xC480u+i); }
      if(OP==9) a[i]=__vsub2(a[i],x+i);
      if(OP==10) a[i]=__vimax3_s16x2(a[i],x,y+i);
      if(OP==11) a[i]=__vimax_s16x2_relu(a[i],y+i) ^ x; // relu max + LOP3
      if(OP==12) a[i]=a[i]*x+y;              // IMAD
      if(OP==13) { a[i]=__viaddmax_s16x2(a[i],x,y+i); a[i]=a[i]*x+y; }
      if(OP==14) { a[i]=__vimax_s16x2_relu(a[i],y+i); a[i]=a[i]*x+y; }
    }
  }
  unsigned s=0;
  #pragma unroll
  for(int i=0;i<N_ACC;i++) s^=a[i];
  if(s==0x12345678u) out[0]=s;
}
const char* names[]={"viaddmax_s16x2","vimax_s16x2_relu","vimax3_s16x2_relu","vadd2","prmt","vmaxs2","iadd","viaddmax+vadd2","viaddmax+prmt","vsub2","vimax3_s16x2","vimax_relu+xor","imad","viaddmax+imad","vimax_relu+imad"};
template<int OP> void run(unsigned* d, int sms, int clk_khz){
  cudaEvent_t e0,e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  int blocks=sms*8, threads=256;
  k<OP><<<blocks,threads>>>(d,3u,5u); cudaDeviceSynchronize();
  float best=1e9;
  for(int r=0;r<5;r++){ cudaEventRecord(e0); k<OP><<<blocks,threads>>>(d,3u,5u); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms,e0,e1); if(ms<best) best=ms; }
  double ops_per=(OP==7||OP==8||OP==11||OP==13||OP==14)?2:1;
  double warp_inst=(double)blocks*threads/32*ITERS*N_ACC*ops_per;
  double per_clk_sm=warp_inst/(best*1e-3)/((double)clk_khz*1e3)/sms;
  printf("%-22s %8.3f ms  %6.3f warp-inst/clk/SM (assuming %d MHz)\n",names[OP],best,per_clk_sm,clk_khz/1000);
}
// One dependent chain, one warp: latency in clocks.
template<int OP> __global__ void lat(unsigned* out, unsigned x, unsigned y, long long* cyc){
  unsigned a=threadIdx.x; long long t0=clock64();
  for(int it=0;it<ITERS;it++){
    if(OP==0) a=__viaddmax_s16x2(a,x,y);
    if(OP==1) a=__vimax_s16x2_relu(a,y);
    if(OP==2) a=__vimax3_s16x2_relu(a,x,y);
    if(OP==3) a=__vadd2(a,x);
    if(OP==4) a=prmt(a,x,0xC480u);
  }
  long long t1=clock64(); if(threadIdx.x==0) *cyc=t1-t0; if(a==0x12345678u) out[0]=a;
}
template<int OP> void runlat(unsigned* d, long long* c){
  lat<OP><<<1,32>>>(d,3u,5u,c); cudaDeviceSynchronize(); long long h; cudaMemcpy(&h,c,8,cudaMemcpyDeviceToHost);
  printf("latency %-22s %6.2f clk\n",names[OP],(double)h/ITERS);
}
int main(){
  int sms, clk; cudaDeviceGetAttribute(&sms,cudaDevAttrMultiProcessorCount,0); cudaDeviceGetAttribute(&clk,cudaDevAttrClockRate,0);
  unsigned* d; cudaMalloc(&d,64); long long* c; cudaMalloc(&c,8);
  printf("SMs %d, clock %d MHz\n",sms,clk/1000);
  run<0>(d,sms,clk);run<1>(d,sms,clk);run<2>(d,sms,clk);run<3>(d,sms,clk);run<4>(d,sms,clk);run<5>(d,sms,clk);run<6>(d,sms,clk);
  run<7>(d,sms,clk);run<8>(d,sms,clk);run<9>(d,sms,clk);run<10>(d,sms,clk);run<11>(d,sms,clk);run<12>(d,sms,clk);run<13>(d,sms,clk);run<14>(d,sms,clk);
  runlat<0>(d,c);runlat<1>(d,c);runlat<2>(d,c);runlat<3>(d,c);runlat<4>(d,c);
  return 0;
}
