//! The state dir's schema version: which store layout wrote it (the trees,
//! their keys, the shapes of their values). The first open of a store
//! writes it; every open reads it first. A state dir written by a newer
//! ferroclaw is refused before anything in it is written (an older binary
//! never rewrites what it cannot read); a store from before the version
//! existed is today's layout, version 1.

use serde::{Deserialize, Serialize};

use super::{Store, StoreError, Tree};

/// The layout this build writes. Bump with every change to a tree, a key
/// or a value shape, together with the code that opens the older ones.
pub const SCHEMA_VERSION: u32 = 1;

/// The key of the mark in the `meta` tree.
pub const SCHEMA_KEY: &str = "schema";

/// What the mark says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaMark {
    pub schema: u32,
    /// The ferroclaw version that last wrote the mark.
    pub written_by: String,
}

/// Reads the mark (refusing a newer one), and writes it on a first open.
pub(super) fn check(store: &Store) -> Result<(), StoreError> {
    let mark = match store.get::<SchemaMark>(Tree::Meta, SCHEMA_KEY) {
        Ok(m) => m,
        Err(StoreError::TooNew { found, .. }) => {
            return Err(newer(store, found, "a newer ferroclaw".into()))
        }
        Err(e) => return Err(e),
    };
    match mark {
        Some(m) if m.schema > SCHEMA_VERSION => Err(newer(store, m.schema, m.written_by)),
        Some(_) => Ok(()),
        None => store.put(
            Tree::Meta,
            SCHEMA_KEY,
            &SchemaMark {
                schema: SCHEMA_VERSION,
                written_by: env!("CARGO_PKG_VERSION").to_string(),
            },
        ),
    }
}

/// The mark of the store under `state_dir`, read without opening it as a
/// `Store` (which refuses a newer one): for diagnostics and tests. Writes
/// nothing.
pub fn stored_mark(state_dir: &std::path::Path) -> Result<Option<SchemaMark>, StoreError> {
    let db = super::open_sled(&state_dir.join("store"))?;
    let meta = db.open_tree(Tree::Meta.name())?;
    match meta.get(SCHEMA_KEY)? {
        Some(bytes) => super::decode(Tree::Meta, SCHEMA_KEY, &bytes).map(Some),
        None => Ok(None),
    }
}

fn newer(store: &Store, found: u32, by: String) -> StoreError {
    StoreError::NewerState {
        dir: store.dir().to_path_buf(),
        found,
        by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_open_marks_the_store_and_a_newer_mark_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            let mark: SchemaMark = store.get(Tree::Meta, SCHEMA_KEY).unwrap().unwrap();
            assert_eq!(mark.schema, SCHEMA_VERSION);
            let later = SchemaMark {
                schema: SCHEMA_VERSION + 1,
                written_by: "9.9.9".into(),
            };
            store.put(Tree::Meta, SCHEMA_KEY, &later).unwrap();
            store.put(Tree::Meta, "kept", &42).unwrap();
        }
        for _ in 0..2 {
            let refused = Store::open(dir.path()).err().expect("refused");
            let text = refused.to_string();
            assert!(
                text.contains("schema 2")
                    && text.contains("9.9.9")
                    && text.contains("nothing in it was changed"),
                "{text}"
            );
        }
    }
}
