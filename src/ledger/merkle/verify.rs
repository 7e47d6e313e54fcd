//! Verifying proofs from the hashes alone: an inclusion proof (audit path) of a leaf in a tree of
//! a given size, and a consistency proof between two sizes, as RFC 9162 §2.1.3.2 and §2.1.4.2
//! give the algorithms. Needs no tree: what a verifier holds is a root, a size and the proof.

use std::iter;

use super::{MerkleError, MerkleHasher, NodeHash, check_consistency_sizes};

/// Which side of the running hash a proof node goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sibling {
    /// `H(0x01 ‖ p ‖ r)`.
    Left,
    /// `H(0x01 ‖ r ‖ p)`.
    Right,
}

/// The `fn`/`sn` bookkeeping shared by RFC 9162 §2.1.3.2 step 4 and §2.1.4.2 step 6: `node` is
/// `fn`, the position of the running hash on its level, and `last` is `sn`, the position of the
/// tree's last node on that level.
#[derive(Debug, Clone, Copy)]
struct Walk {
    node: u64,
    last: u64,
}

impl Walk {
    /// Steps b and c for one proof node (step a, `sn == 0`, is the caller's): which side the
    /// node goes on, then move up.
    fn step(&mut self) -> Sibling {
        let sibling = if self.node & 1 == 1 || self.node == self.last {
            // A left sibling. If LSB(fn) is not set, the running hash is the last node of its
            // level and a left child, so it has no sibling: `p` is the left sibling of its first
            // ancestor that is a right child. Shift until LSB(fn) is set or fn is 0.
            while self.node & 1 == 0 && self.node != 0 {
                self.up();
            }
            Sibling::Left
        } else {
            Sibling::Right
        };
        self.up();
        sibling
    }

    fn up(&mut self) {
        self.node >>= 1;
        self.last >>= 1;
    }

    /// How many more proof nodes the walk consumes before `sn` reaches 0.
    fn remaining(mut self) -> usize {
        let mut count = 0;
        while self.last != 0 {
            self.step();
            count += 1;
        }
        count
    }
}

/// Verifies an inclusion proof exactly as RFC 9162 §2.1.3.2 does: that the leaf with hash
/// `leaf_hash` sits at `leaf_index` in a tree of `tree_size` leaves whose root is `root`.
/// `inclusion_path` is lowest node first, as [`MerkleTree::inclusion_proof`] makes it.
pub fn verify_inclusion<H: MerkleHasher + ?Sized>(
    hasher: &H,
    leaf_hash: &NodeHash,
    leaf_index: u64,
    tree_size: u64,
    inclusion_path: &[NodeHash],
    root: &NodeHash,
) -> Result<(), MerkleError> {
    // 1. leaf_index >= tree_size fails.
    if leaf_index >= tree_size {
        return Err(MerkleError::IndexOutOfRange {
            index: leaf_index,
            size: tree_size,
        });
    }
    // 2. fn = leaf_index, sn = tree_size - 1.
    let mut walk = Walk {
        node: leaf_index,
        last: tree_size - 1,
    };
    // Steps 4a and 5 refuse a path that is too long or too short; say so up front, with the
    // length the walk needs.
    let expected = walk.remaining();
    if inclusion_path.len() != expected {
        return Err(MerkleError::WrongProofLength {
            expected,
            actual: inclusion_path.len(),
        });
    }
    // 3. r = hash.
    let mut running = *leaf_hash;
    // 4. For each p in inclusion_path.
    for p in inclusion_path {
        // a. sn == 0 with nodes left over: the path is too long.
        if walk.last == 0 {
            return Err(MerkleError::WrongProofLength {
                expected,
                actual: inclusion_path.len(),
            });
        }
        // b, c.
        running = match walk.step() {
            Sibling::Left => hasher.hash_children(p, &running),
            Sibling::Right => hasher.hash_children(&running, p),
        };
    }
    // 5. sn == 0 and r == root_hash.
    if walk.last != 0 {
        return Err(MerkleError::WrongProofLength {
            expected,
            actual: inclusion_path.len(),
        });
    }
    if running != *root {
        return Err(MerkleError::RootMismatch);
    }
    Ok(())
}

/// Verifies a consistency proof exactly as RFC 9162 §2.1.4.2 does: that the tree of `old_size`
/// leaves with root `old_root` is a prefix of the tree of `new_size` leaves with root `new_root`.
/// `consistency_path` is lowest node first, as [`MerkleTree::consistency_proof`] makes it.
///
/// The RFC algorithm covers `0 < old_size < new_size`. For equal sizes, where `PROOF(m, D[m])`
/// is empty (§2.1.4.1), the proof must be empty and the roots equal. From the empty tree there
/// is no proof ([`MerkleError::EmptyOldTree`]).
pub fn verify_consistency<H: MerkleHasher + ?Sized>(
    hasher: &H,
    old_size: u64,
    new_size: u64,
    old_root: &NodeHash,
    new_root: &NodeHash,
    consistency_path: &[NodeHash],
) -> Result<(), MerkleError> {
    check_consistency_sizes(old_size, new_size)?;
    let wrong_length = |expected| MerkleError::WrongProofLength {
        expected,
        actual: consistency_path.len(),
    };
    if old_size == new_size {
        if !consistency_path.is_empty() {
            return Err(wrong_length(0));
        }
        if old_root != new_root {
            return Err(MerkleError::NewRootMismatch);
        }
        return Ok(());
    }
    // 2. When first is an exact power of 2, first_hash is the path's first node.
    let old_root_leads = old_size.is_power_of_two();
    // 3. fn = first - 1, sn = second - 1.
    let mut walk = Walk {
        node: old_size - 1,
        last: new_size - 1,
    };
    // 4. Right-shift both while LSB(fn) is set.
    while walk.node & 1 == 1 {
        walk.up();
    }
    // Steps 1, 6a and 7 refuse a path that is empty, too long or too short; say so up front.
    let expected = walk.remaining() + usize::from(!old_root_leads);
    if consistency_path.len() != expected {
        return Err(wrong_length(expected));
    }
    let mut path = iter::once(old_root)
        .filter(|_| old_root_leads)
        .chain(consistency_path);
    // 1. An empty path fails.
    let Some(first) = path.next() else {
        return Err(wrong_length(expected));
    };
    // 5. fr = sr = the first node.
    let (mut old_running, mut new_running) = (*first, *first);
    // 6. For each subsequent node c.
    for c in path {
        // a. sn == 0 with nodes left over: the path is too long.
        if walk.last == 0 {
            return Err(wrong_length(expected));
        }
        // b, c.
        match walk.step() {
            Sibling::Left => {
                old_running = hasher.hash_children(c, &old_running);
                new_running = hasher.hash_children(c, &new_running);
            }
            Sibling::Right => new_running = hasher.hash_children(&new_running, c),
        }
    }
    // 7. sn == 0, fr == first_hash, sr == second_hash.
    if walk.last != 0 {
        return Err(wrong_length(expected));
    }
    if old_running != *old_root {
        return Err(MerkleError::OldRootMismatch);
    }
    if new_running != *new_root {
        return Err(MerkleError::NewRootMismatch);
    }
    Ok(())
}
