//! Where the tests find recorded provider responses: `tests/fixtures/real/`, inside the
//! repository, so a fresh clone runs its tests with nothing beside it.

/// The folder of real recorded responses (`SOURCES.md` there gives each file's provenance).
pub(crate) const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/real");

/// A file under [`ROOT`], by its path relative to it.
pub(crate) fn read(path: &str) -> Vec<u8> {
    std::fs::read(format!("{ROOT}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}
