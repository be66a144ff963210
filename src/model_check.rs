//! Model checks of the dispatcher's shared structures (feature `model-check`).
