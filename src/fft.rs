//! FFT support for GPU callbacks: cuFFT plans on the CUDA backend, rustfft on sim.
