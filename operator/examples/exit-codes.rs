//! Writes the one exit-code table (`engine::verdict::exit::TABLE`) where the docs show it: the
//! book's reference page (docs/book/src/reference/exit-codes.md) and README.md between its
//! `exit-codes` markers. `make docs` runs it from the repository's root; tests/tests/readme.rs
//! fails when either has drifted.

use benchmatrix::engine::verdict::exit;

fn main() {
    let table = exit::markdown_table();
    std::fs::write("docs/book/src/reference/exit-codes.md", exit::book_page())
        .expect("docs/book/src/reference/exit-codes.md");
    let readme = std::fs::read_to_string("README.md").expect("README.md");
    let (begin, end) = ("<!-- exit-codes:begin -->\n", "<!-- exit-codes:end -->");
    let (head, rest) = readme
        .split_once(begin)
        .expect("the exit-codes:begin marker");
    let (_, tail) = rest.split_once(end).expect("the exit-codes:end marker");
    std::fs::write("README.md", format!("{head}{begin}{table}{end}{tail}")).expect("README.md");
}
