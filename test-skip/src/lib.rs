//! Skip marks for `make test`. cargo test shows a test that returns early as a
//! pass, so a test that cannot run here calls [`skip`]: it writes the file
//! `target/tmp/skipped/<name>` under the repository root, which the closing line
//! of `make test` counts and names. The same folder takes the marks of the C,
//! Python and Go tests.

use std::path::{Path, PathBuf};

/// The repository root: this crate is its `test-skip/` folder.
pub fn repo_root() -> &'static Path {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here)
}

/// `target/tmp/skipped` under the repository root, whatever the current
/// directory of the test.
pub fn marks_dir() -> PathBuf {
    repo_root().join("target/tmp/skipped")
}

/// Records that the test `name` is skipped for `reason` and says so on stderr.
/// `name` is the mark's file name: which test and why in a few words, in
/// letters, digits, `-`, `_` and `.` (for example `core-checkpoint-no_dev_shm`).
/// Panics if the mark cannot be written: an unrecorded skip would read as a pass.
pub fn skip(name: &str, reason: &str) {
    assert!(
        !name.is_empty()
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c)),
        "skip mark name {name:?} is not a plain file name"
    );
    eprintln!("SKIPPED {name}: {reason}");
    let dir = marks_dir();
    if let Err(e) = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join(name), format!("{reason}\n")))
    {
        panic!("writing the skip mark {name} in {}: {e}", dir.display());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_marks_folder_is_target_tmp_skipped_of_the_workspace() {
        let root = super::repo_root();
        assert!(root.join("Cargo.toml").is_file() && root.join("Makefile").is_file());
        assert_eq!(super::marks_dir(), root.join("target/tmp/skipped"));
    }

    #[test]
    #[should_panic(expected = "not a plain file name")]
    fn a_name_with_a_slash_is_refused() {
        super::skip("../x", "no");
    }
}
