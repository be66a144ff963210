// Which pipe does the packed half max (max.f16x2) take: time of a DPX chain alone and with one more op a step.
#include <cstdio>
#include <cuda_runtime.h>
#define N 8
#define IT 4096
__device__ __forceinline__ unsigned hmax2(unsigned a, unsigned b){unsigned d; asm("max.f16x2 %0,%1,%2;":"=r"(d):"r"(a),"r"(b)); return d;}
template<int K> __global__ void k(unsigned* out, unsigned x, unsigned y){
  unsigned a[N], b[N];
  #pragma unroll
  for(int i=0;i<N;i++){ a[i]=threadIdx.x*7u+i; b[i]=i; }
  for(int it=0;it<IT;it++){
    #pragma unroll
    for(int i=0;i<N;i++){
      a[i]=__viaddmax_s16x2(a[i],x,y+i);
      if(K==1) b[i]=hmax2(b[i],a[i]);
      if(K==2) b[i]=__vimax3_s16x2_relu(b[i],a[i],y);
      if(K==3) b[i]=__vadd2(b[i],a[i]);
      if(K==4) b[i]=__vimax_s16x2_relu(b[i],a[i]);
      if(K==5) { b[i]=hmax2(b[i],a[i]); b[i]=hmax2(b[i],a[i]^x); }
    }
  }
  unsigned s=0;
  #pragma unroll
  for(int i=0;i<N;i++) s^=a[i]^b[i];
  if(s==0x12345678u) out[0]=s;
}
template<int K> void run(const char* name, unsigned* d){
  cudaEvent_t e0,e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  k<K><<<132*8,256>>>(d,3u,5u); cudaDeviceSynchronize(); float best=1e9;
  for(int r=0;r<5;r++){ cudaEventRecord(e0); k<K><<<132*8,256>>>(d,3u,5u); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms,e0,e1); if(ms<best) best=ms; }
  printf("%-40s %.3f ms\n", name, best);
}
int main(){ unsigned* d; cudaMalloc(&d,64);
  run<0>("viaddmax alone",d); run<1>("viaddmax + max.f16x2",d); run<2>("viaddmax + vimax3_relu",d);
  run<3>("viaddmax + vadd2",d); run<4>("viaddmax + vimax_relu",d); run<5>("viaddmax + 2 max.f16x2 (+xor)",d); return 0; }
