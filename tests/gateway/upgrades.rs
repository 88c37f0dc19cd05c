//! A state dir written by a newer ferroclaw: the real binary refuses to
//! start on it with a clear error and an exit code, and leaves it as it
//! was (a second start is refused the same way; the newer build's mark and
//! data are still there).

use std::process::Stdio;

use ferroclaw_actors::store::schema::{stored_mark, SchemaMark, SCHEMA_KEY, SCHEMA_VERSION};
use ferroclaw_actors::store::{Store, Tree};

use crate::support::process::ferroclaw;

#[test]
fn a_newer_state_dir_is_refused_and_never_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let newer = SchemaMark {
        schema: SCHEMA_VERSION + 1,
        written_by: "2099.1.0".into(),
    };
    {
        let store = Store::open(dir.path()).unwrap();
        store.put(Tree::Meta, SCHEMA_KEY, &newer).unwrap();
        store.put(Tree::Meta, "from-the-future", &"kept").unwrap();
    }
    for _ in 0..2 {
        let out = ferroclaw(dir.path())
            .args(["gateway", "--port", "0"])
            .stdout(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains("written by ferroclaw 2099.1.0")
                && err.contains("nothing in it was changed"),
            "{err}"
        );
    }
    // The refused starts wrote nothing: the newer build's mark is there.
    let mark = stored_mark(dir.path()).unwrap();
    assert_eq!(mark, Some(newer));
}
