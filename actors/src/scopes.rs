//! Roles and operator scopes, and the one rule that says which granted scopes
//! satisfy a required one: `operator.admin` covers everything, `operator.write`
//! covers `operator.read`, anything else needs the exact scope.

pub const ADMIN: &str = "operator.admin";
pub const READ: &str = "operator.read";
pub const WRITE: &str = "operator.write";
pub const APPROVALS: &str = "operator.approvals";
pub const PAIRING: &str = "operator.pairing";
pub const TALK_SECRETS: &str = "operator.talk.secrets";
pub const QUESTIONS: &str = "operator.questions";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Operator,
    Node,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "operator" => Some(Role::Operator),
            "node" => Some(Role::Node),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Operator => "operator",
            Role::Node => "node",
        }
    }
}

/// True when `granted` satisfies `required`.
pub fn scope_allows(granted: &[String], required: &str) -> bool {
    granted
        .iter()
        .any(|g| g == ADMIN || g == required || (required == READ && g == WRITE))
}

/// True when every scope of `requested` is covered by `approved`.
pub fn scopes_cover(approved: &[String], requested: &[String]) -> bool {
    requested.iter().all(|r| scope_allows(approved, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn admin_covers_all_write_covers_read_else_exact() {
        let check = |granted: &[&str], required: &str, want: bool| {
            assert_eq!(
                scope_allows(&v(granted), required),
                want,
                "{granted:?} {required}"
            );
        };
        check(&[ADMIN], PAIRING, true);
        check(&[WRITE], READ, true);
        check(&[READ], WRITE, false);
        check(&[WRITE], APPROVALS, false);
        check(&[], READ, false);
        check(&[PAIRING], PAIRING, true);
        assert!(scopes_cover(&v(&[ADMIN]), &v(&[READ, WRITE, PAIRING])));
        assert!(!scopes_cover(&v(&[READ]), &v(&[READ, WRITE])));
    }
}
