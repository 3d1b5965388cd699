//! Prints the book's spec reference (docs/book/src/reference/spec.md), generated from the CRD's
//! schema: `make docs`, or `cargo run -p benchmatrix --example spec-reference > FILE`.

fn main() {
    print!("{}", benchmatrix::resource::reference::spec_reference());
}
