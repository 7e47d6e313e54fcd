//! Merkle trees as RFC 9162 §2.1 defines them: the tree hash, inclusion proofs (audit paths) and
//! consistency proofs, how to generate them and how to verify them.
//!
//! Owns the tree arithmetic and nothing else. The hash function comes in through
//! [`MerkleHasher`]; [`Blake3Hasher`] is the production instance, over the ledger's event
//! hashes as leaf data. This module must not know where leaves come from or where roots and
//! proofs go: no storage, no events, no signing, no checkpoints, no HTTP. It never panics on any
//! input: every size, index and proof is checked and refused with a precise [`MerkleError`].
//!
//! # The tree
//! With `H` the hash function, `MTH({}) = H()`, `MTH({d}) = H(0x00 ‖ d)`, and for `n > 1` leaves
//! `MTH(D[n]) = H(0x01 ‖ MTH(D[0:k]) ‖ MTH(D[k:n]))`, where `k` is the largest power of two
//! strictly less than `n`.
//!
//! # Costs
//! [`MerkleTree`] keeps the hash of every complete, aligned subtree `[j·2^h, (j+1)·2^h)`: level 0
//! holds the `n` leaf hashes, level `h` holds `⌊n / 2^h⌋` nodes, fewer than `2n` hashes in all,
//! so about 64 bytes per leaf (64 MB for a million leaves; growing a `Vec` may briefly need up to
//! twice that). Every hash it ever stores is computed once, when the leaf that completes it is
//! appended, so an append costs O(1) hashes amortized and O(log n) at worst. The root of any
//! size, and every node of a proof, is assembled from at most ⌈log₂ n⌉ stored hashes; a proof
//! reads O(log n) stored hashes and computes O(log² n) hashes at worst (only on the tree's right
//! border, where subtrees are incomplete). Nothing is ever recomputed from the leaves, unless
//! the tree was told to keep only its top ([`MerkleTree::keep_lower_levels_in`]): then below its
//! floor it keeps the nodes of its last block of `2^floor` leaves only (about `64 / 2^floor`
//! bytes per leaf in all), and a dropped node is recomputed from its block's leaves, read from
//! the caller's [`LeafSource`].
//! [`root_from_leaf_hashes`] computes one root in O(n) time and O(log n) memory, for callers that
//! need no proofs.
//!
//! Verifying a proof needs no tree: that is `verify.rs`'s ([`verify_inclusion`],
//! [`verify_consistency`]).

mod verify;

pub use verify::{verify_consistency, verify_inclusion};

/// A node of the tree: a leaf hash, an interior node hash, or a root.
pub type NodeHash = [u8; 32];

/// The hash function of a log, with the RFC 9162 domain separation between leaves and interior
/// nodes. RFC 9162 makes the hash algorithm a parameter of the log.
pub trait MerkleHasher {
    /// `H(0x00 ‖ data)`: the hash of a leaf whose data is `data`.
    fn hash_leaf(&self, data: &[u8]) -> NodeHash;
    /// `H(0x01 ‖ left ‖ right)`: the hash of an interior node.
    fn hash_children(&self, left: &NodeHash, right: &NodeHash) -> NodeHash;
    /// `H()`: the root of the empty tree.
    fn empty_root(&self) -> NodeHash;
}

/// The production hasher: plain BLAKE3 (no key, no derive-key context) over the prefixed bytes,
/// exactly as RFC 9162 uses SHA-256. The 0x00/0x01 prefixes separate leaves from interior nodes;
/// BLAKE3's derive-key mode, which event hashes use, is a separate domain from plain hashing, so
/// a tree node cannot pass for an event hash or the reverse.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Blake3Hasher;

impl MerkleHasher for Blake3Hasher {
    fn hash_leaf(&self, data: &[u8]) -> NodeHash {
        *blake3::Hasher::new()
            .update(&[0x00])
            .update(data)
            .finalize()
            .as_bytes()
    }

    fn hash_children(&self, left: &NodeHash, right: &NodeHash) -> NodeHash {
        *blake3::Hasher::new()
            .update(&[0x01])
            .update(left)
            .update(right)
            .finalize()
            .as_bytes()
    }

    fn empty_root(&self) -> NodeHash {
        *blake3::hash(&[]).as_bytes()
    }
}

/// Why a proof was refused or could not be produced. Verification failures are the verdict on a
/// proof someone else supplied: a caller reports them to whoever asked for the check, as "this
/// proof does not hold", never as a fault of the server. Generation failures mean the caller
/// asked about leaves or sizes the tree does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MerkleError {
    /// The leaf index is not inside the tree (RFC 9162 §2.1.3.2 step 1).
    #[error("leaf index {index} is outside a tree of size {size}")]
    IndexOutOfRange { index: u64, size: u64 },
    /// A proof or root was asked for a tree size larger than the leaves appended so far.
    #[error("tree size {size} is beyond the {len} leaves appended so far")]
    SizeBeyondTree { size: u64, len: u64 },
    /// A consistency proof was asked for, or offered, from a larger tree to a smaller one.
    #[error("the old tree size {old_size} is larger than the new tree size {new_size}")]
    SizesOutOfOrder { old_size: u64, new_size: u64 },
    /// A consistency proof from the empty tree: RFC 9162 defines none (every tree extends the
    /// empty one, so there is nothing to prove), and its verification algorithm needs `first > 0`.
    #[error("there is no consistency proof from the empty tree; every tree extends it")]
    EmptyOldTree,
    /// The proof does not have the number of hashes the sizes (and index) determine: too short,
    /// too long, or not empty where it must be.
    #[error("the proof has {actual} hashes where these sizes require {expected}")]
    WrongProofLength { expected: usize, actual: usize },
    /// An inclusion proof does not lead from the leaf hash to the claimed root.
    #[error("the inclusion proof does not lead to the claimed root")]
    RootMismatch,
    /// A consistency proof does not lead to the claimed root of the old tree.
    #[error("the consistency proof does not lead to the claimed old root")]
    OldRootMismatch,
    /// A consistency proof does not lead to the claimed root of the new tree (for equal sizes:
    /// the two roots differ).
    #[error("the consistency proof does not lead to the claimed new root")]
    NewRootMismatch,
    /// A byte string offered as a node hash is not 32 bytes long.
    #[error("a node hash is 32 bytes long, not {len}")]
    HashLength { len: usize },
    /// A node below the tree's floor over leaves it no longer keeps, which its leaf source could
    /// not give back (see [`MerkleTree::keep_lower_levels_in`]).
    #[error(
        "the node over leaves {start}..{end} is not kept in memory and could not be read back: {reason}"
    )]
    Unavailable {
        start: u64,
        end: u64,
        reason: String,
    },
    /// Stored levels offered to [`MerkleTree::from_levels`] whose sizes no tree has.
    #[error("level {height} holds {len} nodes where the level below requires {expected}")]
    LevelSizes {
        height: usize,
        len: usize,
        expected: usize,
    },
}

/// Reads a node hash from bytes received from elsewhere, refusing any other length.
pub fn hash_from_slice(bytes: &[u8]) -> Result<NodeHash, MerkleError> {
    NodeHash::try_from(bytes).map_err(|_| MerkleError::HashLength { len: bytes.len() })
}

/// `MTH` of the given leaf hashes, in O(n) time and O(log n) memory, without keeping the tree.
pub fn root_from_leaf_hashes<H: MerkleHasher + ?Sized>(
    hasher: &H,
    leaf_hashes: impl IntoIterator<Item = NodeHash>,
) -> NodeHash {
    // Roots of the perfect subtrees seen so far, left to right, each with its height; heights
    // strictly decrease, so there is at most one per bit of the leaf count.
    let mut perfect: Vec<(u32, NodeHash)> = Vec::new();
    for leaf in leaf_hashes {
        let mut node = (0, leaf);
        while let Some(&(height, left)) = perfect.last() {
            if height != node.0 {
                break;
            }
            perfect.pop();
            node = (height + 1, hasher.hash_children(&left, &node.1));
        }
        perfect.push(node);
    }
    fold_right_border(hasher, perfect.iter().rev().map(|(_, hash)| *hash))
        .unwrap_or_else(|| hasher.empty_root())
}

/// Joins the perfect subtrees `s₁ … sₖ` that make up a tree, left to right, into
/// `H(s₁, H(s₂, … H(sₖ₋₁, sₖ)))`, given right to left (smallest first). `None` for none.
fn fold_right_border<H: MerkleHasher + ?Sized>(
    hasher: &H,
    right_to_left: impl IntoIterator<Item = NodeHash>,
) -> Option<NodeHash> {
    right_to_left
        .into_iter()
        .reduce(|right, left| hasher.hash_children(&left, &right))
}

/// Where a tree that keeps only the top of its lower levels reads leaf hashes back from (for a
/// ledger: its stored events).
pub trait LeafSource: Send + Sync {
    /// The leaf hashes of the leaves `start..end`, in order.
    fn leaf_hashes(&self, start: u64, end: u64) -> Result<Vec<NodeHash>, String>;
}

/// An append-only Merkle tree that keeps every complete subtree hash, so that roots and proofs
/// for any size up to [`len`](Self::len) cost O(log n) stored-hash reads (see the module
/// documentation for the memory cost); or, once given a floor and a [`LeafSource`]
/// ([`MerkleTree::keep_lower_levels_in`]), every subtree at or above the floor and, below it,
/// only those of the last block of `2^floor` leaves.
#[derive(Clone)]
pub struct MerkleTree<H> {
    /// The log's hash function.
    hasher: H,
    /// `levels[h][j - base(h)]` is `MTH` of the leaves `[j·2^h, (j+1)·2^h)`; `levels[0]` holds
    /// the leaf hashes. `base(h)` is `pruned >> h` below the floor, 0 from it up. Invariant:
    /// `base(h + 1) + levels[h + 1].len() == (base(h) + levels[h].len()) / 2` for every stored
    /// level, and a level exists once a node of its height was made.
    levels: Vec<Vec<NodeHash>>,
    /// Below this height, nodes over the first `pruned` leaves are not kept; 0 keeps them all.
    floor: u32,
    /// Leaves whose lower nodes are dropped: whole blocks of `2^floor`, never the block of the
    /// last leaf (so the last leaf and the right border are always kept).
    pruned: u64,
    /// Where dropped nodes are recomputed from.
    source: Option<std::sync::Arc<dyn LeafSource>>,
}

impl<H: std::fmt::Debug> std::fmt::Debug for MerkleTree<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MerkleTree")
            .field("hasher", &self.hasher)
            .field("levels", &self.levels)
            .field("floor", &self.floor)
            .field("pruned", &self.pruned)
            .finish_non_exhaustive()
    }
}

impl<H: MerkleHasher> MerkleTree<H> {
    /// The empty tree.
    pub fn new(hasher: H) -> Self {
        Self {
            hasher,
            levels: Vec::new(),
            floor: 0,
            pruned: 0,
            source: None,
        }
    }

    /// A tree holding the given leaf hashes, in order.
    pub fn from_leaf_hashes(hasher: H, leaf_hashes: impl IntoIterator<Item = NodeHash>) -> Self {
        let mut tree = Self::new(hasher);
        for leaf_hash in leaf_hashes {
            tree.push_leaf_hash(leaf_hash);
        }
        tree
    }

    /// A tree from its stored nodes as [`MerkleTree::levels`] gave them (kept in a snapshot), so
    /// that nothing is rehashed. The sizes are checked; the hashes are the caller's to trust.
    pub fn from_levels(hasher: H, levels: Vec<Vec<NodeHash>>) -> Result<Self, MerkleError> {
        for (height, pair) in levels.windows(2).enumerate() {
            let expected = pair[0].len() / 2;
            if pair[1].len() != expected {
                return Err(MerkleError::LevelSizes {
                    height: height + 1,
                    len: pair[1].len(),
                    expected,
                });
            }
        }
        // The highest stored level holds exactly one node: a level exists once it holds one,
        // and two would make the next.
        if let Some(top) = levels.last()
            && top.len() != 1
        {
            return Err(MerkleError::LevelSizes {
                height: levels.len() - 1,
                len: top.len(),
                expected: 1,
            });
        }
        Ok(Self {
            levels,
            ..Self::new(hasher)
        })
    }

    /// A tree of `leaves` leaves from the nodes it keeps with `floor` after dropping the lower
    /// nodes over the first `pruned` leaves (as [`MerkleTree::levels`] and
    /// [`MerkleTree::pruned`] gave them), with no leaf source yet. The sizes are checked; the
    /// hashes are the caller's to trust.
    pub fn from_kept_levels(
        hasher: H,
        floor: u32,
        leaves: u64,
        pruned: u64,
        levels: Vec<Vec<NodeHash>>,
    ) -> Result<Self, MerkleError> {
        let lens = kept_level_lens(floor, leaves, pruned)?;
        if levels.len() != lens.len() {
            return Err(MerkleError::LevelSizes {
                height: levels.len(),
                len: levels.len(),
                expected: lens.len(),
            });
        }
        for (height, (level, expected)) in levels.iter().zip(lens).enumerate() {
            if level.len() != expected {
                return Err(MerkleError::LevelSizes {
                    height,
                    len: level.len(),
                    expected,
                });
            }
        }
        Ok(Self {
            hasher,
            levels,
            floor,
            pruned,
            source: None,
        })
    }

    /// From now on, keeps below `floor` only the nodes of the last block of `2^floor` leaves
    /// (dropping the others now, and later as [`MerkleTree::drop_lower_nodes`] is told the
    /// leaves `source` can give), and reads dropped ones back from `source` when a root or
    /// proof needs them. Every leaf appended so far must be readable from `source`. A tree
    /// that already has a floor keeps it and only takes the source.
    pub fn keep_lower_levels_in(&mut self, floor: u32, source: std::sync::Arc<dyn LeafSource>) {
        self.source = Some(source);
        if self.floor == 0 && floor > 0 && floor < 63 {
            self.floor = floor;
        }
        self.drop_lower_nodes(self.len());
    }

    /// Drops the nodes below the floor over the whole blocks of leaves before the block of
    /// leaf `readable - 1`: the caller says the source can give the first `readable` leaves
    /// (for a ledger: they are durable). The last block is always kept.
    pub fn drop_lower_nodes(&mut self, readable: u64) {
        if self.floor > 0 && self.source.is_some() {
            self.prune_to(pruned_for(self.floor, readable.min(self.len())));
        }
    }

    /// The height below which nodes over old leaves are not kept (0: all are kept).
    pub fn floor(&self) -> u32 {
        self.floor
    }

    /// The leaves whose nodes below the floor are dropped (whole blocks from the first).
    pub fn pruned(&self) -> u64 {
        self.pruned
    }

    /// The node of height `height` at position `index` of its level, if this tree keeps it.
    pub fn kept_node(&self, height: u32, index: u64) -> Option<NodeHash> {
        self.stored(height, index.checked_shl(height)?)
    }

    /// Drops the nodes below the floor over the first `pruned` leaves.
    fn prune_to(&mut self, pruned: u64) {
        if pruned <= self.pruned {
            return;
        }
        for height in 0..self.floor {
            let Some(level) = self.levels.get_mut(height as usize) else {
                break;
            };
            let drop = (pruned >> height) - (self.pruned >> height);
            level.drain(..usize::try_from(drop).unwrap_or(usize::MAX).min(level.len()));
        }
        self.pruned = pruned;
    }

    /// Where level `height`'s first kept node sits in the level.
    fn base(&self, height: u32) -> u64 {
        if height < self.floor {
            self.pruned >> height
        } else {
            0
        }
    }

    /// The stored nodes: `levels()[h][j]` is the hash of the leaves `[j·2^h, (j+1)·2^h)`; below
    /// the [`floor`](Self::floor), a level starts at the first node it keeps.
    pub fn levels(&self) -> &[Vec<NodeHash>] {
        &self.levels
    }

    /// The hash function of this tree.
    pub fn hasher(&self) -> &H {
        &self.hasher
    }

    /// The number of leaves appended so far.
    pub fn len(&self) -> u64 {
        let leaves = self.levels.first().map_or(0, Vec::len);
        // A `usize` count always fits in `u64` on the platforms Rust supports.
        u64::try_from(leaves)
            .unwrap_or(u64::MAX)
            .saturating_add(self.base(0))
    }

    /// Whether no leaf has been appended yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a leaf given its data (hashed as `H(0x00 ‖ data)`); returns its index.
    pub fn push_leaf(&mut self, data: &[u8]) -> u64 {
        let leaf_hash = self.hasher.hash_leaf(data);
        self.push_leaf_hash(leaf_hash)
    }

    /// Appends a leaf given its leaf hash; returns its index. Stores every subtree the new leaf
    /// completes: O(1) hashes amortized, ⌈log₂ n⌉ at worst.
    pub fn push_leaf_hash(&mut self, leaf_hash: NodeHash) -> u64 {
        let index = self.len();
        let mut node = leaf_hash;
        let mut height = 0;
        loop {
            if self.levels.len() == height {
                self.levels.push(Vec::new());
            }
            let Some(level) = self.levels.get_mut(height) else {
                break;
            };
            level.push(node);
            // A node at an even position waits for its right sibling (the first kept node of a
            // level is always at an even position).
            if level.len() % 2 == 1 {
                break;
            }
            let [.., left, right] = level.as_slice() else {
                break;
            };
            node = self.hasher.hash_children(left, right);
            height += 1;
        }
        index
    }

    /// The leaf hash at `index`.
    pub fn leaf_hash(&self, index: u64) -> Result<NodeHash, MerkleError> {
        let size = self.len();
        if index >= size {
            return Err(MerkleError::IndexOutOfRange { index, size });
        }
        self.node(0, index)?
            .ok_or(MerkleError::IndexOutOfRange { index, size })
    }

    /// The root of the whole tree; `H()` when it is empty.
    pub fn root(&self) -> NodeHash {
        // The whole tree is always within the tree.
        self.root_at(self.len())
            .unwrap_or_else(|_| self.hasher.empty_root())
    }

    /// The root the tree had when it held its first `size` leaves.
    pub fn root_at(&self, size: u64) -> Result<NodeHash, MerkleError> {
        self.check_size(size)?;
        if size == 0 {
            return Ok(self.hasher.empty_root());
        }
        self.subtree(0, size)
    }

    /// The inclusion proof (audit path, RFC 9162 §2.1.3.1 `PATH(m, D[n])`) for the leaf at
    /// `leaf_index` in the tree of the first `tree_size` leaves, lowest node first.
    pub fn inclusion_proof(
        &self,
        leaf_index: u64,
        tree_size: u64,
    ) -> Result<Vec<NodeHash>, MerkleError> {
        self.check_size(tree_size)?;
        if leaf_index >= tree_size {
            return Err(MerkleError::IndexOutOfRange {
                index: leaf_index,
                size: tree_size,
            });
        }
        // Walk down from the root. [start, end) is the current subtree; each step records the
        // sibling of the half that holds the leaf.
        let (mut start, mut end) = (0, tree_size);
        let mut top_down = Vec::new();
        while end - start > 1 {
            let split = start + largest_power_of_two_below(end - start);
            if leaf_index < split {
                top_down.push(self.subtree(split, end)?);
                end = split;
            } else {
                top_down.push(self.subtree(start, split)?);
                start = split;
            }
        }
        top_down.reverse();
        Ok(top_down)
    }

    /// The consistency proof (RFC 9162 §2.1.4.1 `PROOF(m, D[n])`) that the tree of the first
    /// `old_size` leaves is a prefix of the tree of the first `new_size` leaves, lowest node
    /// first. Empty when the sizes are equal.
    pub fn consistency_proof(
        &self,
        old_size: u64,
        new_size: u64,
    ) -> Result<Vec<NodeHash>, MerkleError> {
        self.check_size(new_size)?;
        check_consistency_sizes(old_size, new_size)?;
        // SUBPROOF(m, D[start:end], b), walking down from the root. `old_is_whole` is `b`: true
        // while the current subtree starts at leaf 0, so that once it narrows to exactly the old
        // tree, that node is the old root, which the verifier already holds and the proof omits.
        // Invariant: start < old_size <= end.
        let (mut start, mut end) = (0, new_size);
        let mut old_is_whole = true;
        let mut top_down = Vec::new();
        while old_size != end {
            let split = start + largest_power_of_two_below(end - start);
            if old_size <= split {
                top_down.push(self.subtree(split, end)?);
                end = split;
            } else {
                top_down.push(self.subtree(start, split)?);
                start = split;
                old_is_whole = false;
            }
        }
        if !old_is_whole {
            top_down.push(self.subtree(start, end)?);
        }
        top_down.reverse();
        Ok(top_down)
    }

    fn check_size(&self, size: u64) -> Result<(), MerkleError> {
        let len = self.len();
        if size > len {
            return Err(MerkleError::SizeBeyondTree { size, len });
        }
        Ok(())
    }

    /// `MTH(D[start:end])` for a non-empty subtree of the RFC recursion, whose `start` is a
    /// multiple of the smallest power of two `>= end - start`. Such a range is a run of complete
    /// subtrees, one per set bit of its width, all stored; they are joined right to left.
    fn subtree(&self, start: u64, end: u64) -> Result<NodeHash, MerkleError> {
        let beyond = MerkleError::SizeBeyondTree {
            size: end,
            len: self.len(),
        };
        let mut right_edge = end;
        let mut parts = Vec::new();
        while right_edge > start {
            // The smallest remaining complete subtree ends at `right_edge`.
            let height = (right_edge - start).trailing_zeros();
            let left_edge = right_edge - (1u64 << height);
            parts.push(
                self.node(height, left_edge)?
                    .ok_or_else(|| beyond.clone())?,
            );
            right_edge = left_edge;
        }
        fold_right_border(&self.hasher, parts).ok_or(beyond)
    }

    /// The stored hash of the complete subtree of height `height` starting at leaf `start`, if
    /// `start` is aligned, the subtree is complete and this tree keeps it.
    fn stored(&self, height: u32, start: u64) -> Option<NodeHash> {
        if start.trailing_zeros() < height {
            return None;
        }
        let level = self.levels.get(usize::try_from(height).ok()?)?;
        let at = (start >> height).checked_sub(self.base(height))?;
        level.get(usize::try_from(at).ok()?).copied()
    }

    /// The hash of the complete subtree of height `height` starting at leaf `start`: stored, or
    /// (below the floor, over leaves no longer kept) recomputed from the leaf source. `None`
    /// when there is no such subtree.
    fn node(&self, height: u32, start: u64) -> Result<Option<NodeHash>, MerkleError> {
        if let Some(node) = self.stored(height, start) {
            return Ok(Some(node));
        }
        let Some(end) = 1u64
            .checked_shl(height)
            .and_then(|width| start.checked_add(width))
        else {
            return Ok(None);
        };
        if height >= self.floor || end > self.pruned || start.trailing_zeros() < height {
            return Ok(None);
        }
        let unavailable = |reason: String| MerkleError::Unavailable { start, end, reason };
        let source = self
            .source
            .as_ref()
            .ok_or_else(|| unavailable("the tree has no leaf source".into()))?;
        let leaves = source.leaf_hashes(start, end).map_err(unavailable)?;
        if leaves.len() as u64 != end - start {
            return Err(unavailable(format!(
                "the source gave {} leaves for {}",
                leaves.len(),
                end - start
            )));
        }
        Ok(Some(root_from_leaf_hashes(&self.hasher, leaves)))
    }
}

/// How many nodes each level of a tree of `leaves` leaves keeps, from the leaves up, when the
/// nodes below `floor` over its first `pruned` leaves are dropped ([`MerkleTree::levels`] of
/// such a tree); an error when no such tree exists.
pub fn kept_level_lens(floor: u32, leaves: u64, pruned: u64) -> Result<Vec<usize>, MerkleError> {
    if floor >= 63
        || pruned > pruned_for(floor, leaves)
        || (pruned > 0 && pruned.trailing_zeros() < floor)
    {
        return Err(MerkleError::LevelSizes {
            height: 0,
            len: usize::try_from(pruned).unwrap_or(usize::MAX),
            expected: usize::try_from(pruned_for(floor, leaves)).unwrap_or(usize::MAX),
        });
    }
    let heights = if leaves == 0 { 0 } else { leaves.ilog2() + 1 };
    Ok((0..heights)
        .map(|h| {
            let base = if h < floor { pruned >> h } else { 0 };
            usize::try_from((leaves >> h) - base).unwrap_or(usize::MAX)
        })
        .collect())
}

/// The leaves of a tree of `leaves` leaves whose lower nodes are dropped with `floor`: the
/// whole blocks of `2^floor` before the block of the last leaf.
fn pruned_for(floor: u32, leaves: u64) -> u64 {
    if floor == 0 || leaves == 0 {
        return 0;
    }
    ((leaves - 1) >> floor) << floor
}

/// The sizes a consistency proof can exist for: `0 < old_size <= new_size`.
fn check_consistency_sizes(old_size: u64, new_size: u64) -> Result<(), MerkleError> {
    if old_size > new_size {
        return Err(MerkleError::SizesOutOfOrder { old_size, new_size });
    }
    if old_size == 0 {
        return Err(MerkleError::EmptyOldTree);
    }
    Ok(())
}

/// The largest power of two strictly less than `n`; 1 when `n < 2` (never used that way).
fn largest_power_of_two_below(n: u64) -> u64 {
    match n.checked_sub(1) {
        Some(below) if below > 0 => 1 << below.ilog2(),
        _ => 1,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
