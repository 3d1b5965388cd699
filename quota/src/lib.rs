//! CPU quota detection (written by the target work; see issue 2).
