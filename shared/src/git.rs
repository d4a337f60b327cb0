//! Git object ids as git computes them: a blob's (in [`crate::digest`],
//! hashed while streaming) and a tree's, so that the mirror and the
//! fixture give the Hub's clients the ids the Hub itself would.

use sha1::{Digest, Sha1};

/// One entry of a git tree.
#[derive(Debug, Clone, Copy)]
pub struct TreeItem<'a> {
    /// The entry's name inside its folder (no `/`).
    pub name: &'a str,
    /// A folder (mode 40000) rather than a file (mode 100644).
    pub is_dir: bool,
    /// The entry's object id, 40 hex digits.
    pub oid: &'a str,
}

/// The git tree id of a folder holding `items`: sha1 over `tree <len>\0`
/// and the entries `<mode> <name>\0<20-byte oid>`, sorted as git sorts them
/// (a folder's name compares as if it ended in `/`). An oid that is not hex
/// counts as its bytes decoded so far (none): the callers hold only checked
/// ids.
pub fn tree_oid(items: &[TreeItem<'_>]) -> String {
    let mut sorted: Vec<(String, &TreeItem<'_>)> = items
        .iter()
        .map(|i| {
            let key = if i.is_dir {
                format!("{}/", i.name)
            } else {
                i.name.to_string()
            };
            (key, i)
        })
        .collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut body = Vec::new();
    for (_, item) in sorted {
        let mode = if item.is_dir { "40000" } else { "100644" };
        body.extend_from_slice(mode.as_bytes());
        body.push(b' ');
        body.extend_from_slice(item.name.as_bytes());
        body.push(0);
        body.extend_from_slice(&hex::decode(item.oid).unwrap_or_default());
    }
    let mut h = Sha1::new();
    h.update(format!("tree {}\0", body.len()).as_bytes());
    h.update(&body);
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::git_blob_sha1_hex;

    #[test]
    fn as_git_computes_them() {
        // `git hash-object -t tree /dev/null`: the empty tree.
        assert_eq!(tree_oid(&[]), "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
        // A folder with `a` ("hello\n") and `b/c` (empty): made with
        // `git init; printf 'hello\n' > a; mkdir b; : > b/c; git add .;
        // git write-tree` and `git rev-parse HEAD:b` after a commit.
        let hello = git_blob_sha1_hex(b"hello\n");
        let empty = git_blob_sha1_hex(b"");
        let b = tree_oid(&[TreeItem {
            name: "c",
            is_dir: false,
            oid: &empty,
        }]);
        assert_eq!(b, "587ff082e0b98914788500eae5dd6a33f04883c9");
        let root = tree_oid(&[
            TreeItem {
                name: "b",
                is_dir: true,
                oid: &b,
            },
            TreeItem {
                name: "a",
                is_dir: false,
                oid: &hello,
            },
        ]);
        assert_eq!(root, "5f32a7511ec2c52349cbf0c7b6d568b0692bb0e0");
    }

    #[test]
    fn a_folder_sorts_as_if_it_ended_in_a_slash() {
        let oid = "a".repeat(40);
        // "a-b" < "a/" < "a0" by bytes: '-' 0x2d, '/' 0x2f, '0' 0x30.
        let items = [
            TreeItem {
                name: "a0",
                is_dir: false,
                oid: &oid,
            },
            TreeItem {
                name: "a",
                is_dir: true,
                oid: &oid,
            },
            TreeItem {
                name: "a-b",
                is_dir: false,
                oid: &oid,
            },
        ];
        let mut reversed = items;
        reversed.reverse();
        assert_eq!(tree_oid(&items), tree_oid(&reversed));
    }
}
