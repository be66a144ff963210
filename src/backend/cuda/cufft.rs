//! cuFFT through cudarc's checked layer: plans bound to a stream, batched transforms.
