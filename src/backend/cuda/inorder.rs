//! A hand-written, in-order CUDA pipeline (issue 6's baseline).
