//! Tests of the Merkle tree against RFC 6962/9162 SHA-256 vectors, transparency-dev probes and
//! exhaustive small trees, each proof checked with a second verifier written from the RFC's
//! recursive definitions and with many altered copies of it.

//! Every claim is judged through [`check`]: by the verifier under test, by a naive verifier
//! transcribed from the RFC's recursive definitions, and, for a claim that holds, once more
//! for each tampered or resized variant of it.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use super::verify::Sibling;
use super::*;

/// RFC 6962's hasher, for the published SHA-256 vectors.
struct Sha256Hasher;

impl MerkleHasher for Sha256Hasher {
    fn hash_leaf(&self, data: &[u8]) -> NodeHash {
        Sha256::new()
            .chain_update([0x00])
            .chain_update(data)
            .finalize()
            .into()
    }

    fn hash_children(&self, left: &NodeHash, right: &NodeHash) -> NodeHash {
        let hasher = Sha256::new().chain_update([0x01]).chain_update(left);
        hasher.chain_update(right).finalize().into()
    }

    fn empty_root(&self) -> NodeHash {
        Sha256::digest([]).into()
    }
}

// ---- fixtures (provenance is recorded in each file) --------------------------------------

const SHA256_TREE: &str = include_str!("../../../tests/fixtures/merkle/rfc6962_sha256_tree.json");
const SHA256_PROOFS: &str =
    include_str!("../../../tests/fixtures/merkle/rfc6962_sha256_known_proofs.json");
const WORKED_EXAMPLE: &str =
    include_str!("../../../tests/fixtures/merkle/rfc9162_worked_example.json");
const INCLUSION_PROBES: &str =
    include_str!("../../../tests/fixtures/merkle/transparency_dev_inclusion_probes.json");
const CONSISTENCY_PROBES: &str =
    include_str!("../../../tests/fixtures/merkle/transparency_dev_consistency_probes.json");
const BLAKE3_ROOTS: &str =
    include_str!("../../../tests/fixtures/merkle/blake3_regression_roots.json");

/// Probes whose published verdict this module deliberately does not reproduce, and why.
const PROBE_DEVIATIONS: &[(&str, &str)] = &[(
    "testdata/consistency/additional/sizes-are-equal-one-and-proof-is-empty.json",
    "its equal 'roots' are 12 bytes long; a node hash is exactly 32 bytes here, so the claim \
     is refused by hash_from_slice before it reaches a verifier",
)];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TreeVectors {
    leaf_inputs: Vec<String>,
    #[serde(default)]
    node_hashes_by_level: Vec<Vec<String>>,
    root_hashes_by_size: Vec<String>,
}

/// Known proofs, or the worked example: an inclusion proof has `leafIndex` and `treeSize`,
/// a consistency proof `size1` and `size2`, except in the worked example, where the sizes
/// left out are its `treeSize` and the path holds node names rather than hex hashes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Proofs {
    #[serde(default)]
    tree_size: u64,
    #[serde(default)]
    nodes: BTreeMap<String, [usize; 2]>,
    inclusion: Vec<Proof>,
    consistency: Vec<Proof>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Proof {
    #[serde(default)]
    leaf_index: u64,
    #[serde(default)]
    tree_size: u64,
    #[serde(default)]
    size1: u64,
    #[serde(default)]
    size2: u64,
    path: Vec<String>,
}

/// One transparency-dev probe file, inclusion or consistency; byte strings in hex.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Probe {
    file: String,
    #[serde(default)]
    leaf_idx: u64,
    #[serde(default)]
    tree_size: u64,
    #[serde(default)]
    leaf_hash: String,
    #[serde(default)]
    root: String,
    #[serde(default)]
    size1: u64,
    #[serde(default)]
    size2: u64,
    #[serde(default)]
    root1: String,
    #[serde(default)]
    root2: String,
    proof: Vec<String>,
    want_err: bool,
}

#[derive(Deserialize)]
struct Probes {
    probes: Vec<Probe>,
}

fn parse<T: DeserializeOwned>(json: &str) -> T {
    serde_json::from_str(json).expect("fixture parses")
}

fn unhex(s: &str) -> Vec<u8> {
    let digit = |i: usize| u8::from_str_radix(s.get(i..i + 2).expect("even length"), 16);
    (0..s.len())
        .step_by(2)
        .map(|i| digit(i).expect("hex"))
        .collect()
}

fn node(s: &str) -> NodeHash {
    hash_from_slice(&unhex(s)).expect("a 32-byte hash")
}

fn nodes(list: &[String]) -> Vec<NodeHash> {
    list.iter().map(|s| node(s)).collect()
}

fn at(n: u64) -> usize {
    usize::try_from(n).expect("fits")
}

fn to_u64(n: usize) -> u64 {
    u64::try_from(n).expect("fits")
}

fn leaf_hashes<H: MerkleHasher>(hasher: &H, inputs: &[String]) -> Vec<NodeHash> {
    inputs.iter().map(|s| hasher.hash_leaf(&unhex(s))).collect()
}

/// Leaf hashes of `n` distinct leaves, for trees no vector covers.
fn generated_leaves<H: MerkleHasher>(hasher: &H, n: u64) -> Vec<NodeHash> {
    (0..n).map(|i| hasher.hash_leaf(&i.to_be_bytes())).collect()
}

// ---- the RFC's recursive definitions, transcribed a second time --------------------------

/// The largest power of two below `n >= 2`, by counting up.
fn split(n: u64) -> u64 {
    let mut k = 1;
    while k <= (n - 1) / 2 {
        k *= 2;
    }
    k
}

fn halves(leaves: &[NodeHash]) -> (&[NodeHash], &[NodeHash]) {
    leaves.split_at(at(split(to_u64(leaves.len()))))
}

/// RFC 9162 §2.1.1 `MTH(D[n])`.
fn naive_root<H: MerkleHasher>(hasher: &H, leaves: &[NodeHash]) -> NodeHash {
    match leaves {
        [] => hasher.empty_root(),
        [leaf] => *leaf,
        _ => {
            let (left, right) = halves(leaves);
            hasher.hash_children(&naive_root(hasher, left), &naive_root(hasher, right))
        }
    }
}

/// RFC 9162 §2.1.3.1 `PATH(m, D[n])`.
fn naive_path<H: MerkleHasher>(hasher: &H, m: usize, leaves: &[NodeHash]) -> Vec<NodeHash> {
    if leaves.len() <= 1 {
        return Vec::new();
    }
    let (left, right) = halves(leaves);
    let (mut path, sibling) = match m.checked_sub(left.len()) {
        None => (naive_path(hasher, m, left), naive_root(hasher, right)),
        Some(m) => (naive_path(hasher, m, right), naive_root(hasher, left)),
    };
    path.push(sibling);
    path
}

/// RFC 9162 §2.1.4.1 `SUBPROOF(m, D[n], b)`; `PROOF(m, D[n])` is `b = true`.
fn naive_subproof<H: MerkleHasher>(
    hasher: &H,
    m: usize,
    leaves: &[NodeHash],
    b: bool,
) -> Vec<NodeHash> {
    if m == leaves.len() {
        return if b {
            Vec::new()
        } else {
            vec![naive_root(hasher, leaves)]
        };
    }
    let (left, right) = halves(leaves);
    let (mut proof, sibling) = if m <= left.len() {
        (
            naive_subproof(hasher, m, left, b),
            naive_root(hasher, right),
        )
    } else {
        let m = m - left.len();
        (
            naive_subproof(hasher, m, right, false),
            naive_root(hasher, left),
        )
    };
    proof.push(sibling);
    proof
}

/// The sides of `PATH(m, D[n])`'s nodes, lowest first, read off the recursion.
fn naive_sides(m: u64, n: u64) -> Vec<Sibling> {
    if n <= 1 {
        return Vec::new();
    }
    let k = split(n);
    let (mut sides, side) = match m.checked_sub(k) {
        None => (naive_sides(m, k), Sibling::Right),
        Some(m) => (naive_sides(m, n - k), Sibling::Left),
    };
    sides.push(side);
    sides
}

/// (old root, new root) rebuilt from a proof shaped like `SUBPROOF(m, D[n], b)`, taking
/// its nodes from the end, since the sibling at the top comes last.
fn naive_rebuild<H: MerkleHasher>(
    hasher: &H,
    (m, n, b): (u64, u64, bool),
    proof: &mut Vec<NodeHash>,
    old_root: NodeHash,
) -> Option<(NodeHash, NodeHash)> {
    if m == n {
        let whole = if b { old_root } else { proof.pop()? };
        return Some((whole, whole));
    }
    let k = split(n);
    let sibling = proof.pop()?;
    if m <= k {
        let (old, new) = naive_rebuild(hasher, (m, k, b), proof, old_root)?;
        Some((old, hasher.hash_children(&new, &sibling)))
    } else {
        let (old, new) = naive_rebuild(hasher, (m - k, n - k, false), proof, old_root)?;
        let join = |child: NodeHash| hasher.hash_children(&sibling, &child);
        Some((join(old), join(new)))
    }
}

// ---- claims and the one check ------------------------------------------------------------

/// What a proof is offered for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Statement {
    /// `leaf` is at `index` in the tree of `size` leaves whose root is `root`.
    Inclusion {
        leaf: NodeHash,
        index: u64,
        size: u64,
        root: NodeHash,
    },
    /// The tree of `old_size` leaves with `old_root` is a prefix of the tree of `new_size`
    /// leaves with `new_root`.
    Consistency {
        old_size: u64,
        new_size: u64,
        old_root: NodeHash,
        new_root: NodeHash,
    },
}

/// `leaf` is at `index` in the tree of `size` leaves whose root is `root`.
fn inclusion(leaf: NodeHash, index: u64, size: u64, root: NodeHash) -> Statement {
    Statement::Inclusion {
        leaf,
        index,
        size,
        root,
    }
}

/// The tree of `old_size` leaves with `old_root` is a prefix of the tree of `new_size`
/// leaves with `new_root`.
fn consistency(old_size: u64, new_size: u64, old_root: NodeHash, new_root: NodeHash) -> Statement {
    Statement::Consistency {
        old_size,
        new_size,
        old_root,
        new_root,
    }
}

#[derive(Debug, Clone)]
struct Claim {
    statement: Statement,
    path: Vec<NodeHash>,
}

/// What [`check`] expects of a claim.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Holds,
    /// Refused, for a reason the vector does not say.
    Refused,
    RefusedWith(MerkleError),
}

/// How hard [`check`] tries to break a claim that holds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tampering {
    /// Not at all.
    None,
    /// Every structural change, and three bits of each hash flipped.
    Sampled,
    /// Every structural change, and every bit of every hash flipped in turn.
    EveryBit,
}

impl Tampering {
    fn bits(self) -> Vec<usize> {
        match self {
            Tampering::None => Vec::new(),
            Tampering::Sampled => vec![0, 130, 255],
            Tampering::EveryBit => (0..256).collect(),
        }
    }
}

fn flip(hash: &mut NodeHash, bit: usize) {
    hash[bit / 8] ^= 1 << (bit % 8);
}

impl Claim {
    fn verify<H: MerkleHasher>(&self, hasher: &H) -> Result<(), MerkleError> {
        let path = &self.path;
        match self.statement {
            Statement::Inclusion {
                leaf,
                index,
                size,
                root,
            } => verify_inclusion(hasher, &leaf, index, size, path, &root),
            Statement::Consistency {
                old_size,
                new_size,
                old_root,
                new_root,
            } => verify_consistency(hasher, old_size, new_size, &old_root, &new_root, path),
        }
    }

    /// The verdict of the RFC's recursive definitions, taken literally.
    fn naive_verdict<H: MerkleHasher>(&self, hasher: &H) -> bool {
        match self.statement {
            Statement::Inclusion {
                leaf,
                index,
                size,
                root,
            } => {
                let sides = naive_sides(index, size);
                let fold = |r, (side, p): (&Sibling, &NodeHash)| match side {
                    Sibling::Left => hasher.hash_children(p, &r),
                    Sibling::Right => hasher.hash_children(&r, p),
                };
                index < size
                    && sides.len() == self.path.len()
                    && sides.iter().zip(&self.path).fold(leaf, fold) == root
            }
            Statement::Consistency {
                old_size,
                new_size,
                old_root,
                new_root,
            } => {
                let mut rest = self.path.clone();
                let shape = (old_size, new_size, true);
                old_size > 0
                    && old_size <= new_size
                    && naive_rebuild(hasher, shape, &mut rest, old_root)
                        == Some((old_root, new_root))
                    && rest.is_empty()
            }
        }
    }

    fn with_path(&self, edit: impl FnOnce(&mut Vec<NodeHash>)) -> Claim {
        let mut claim = self.clone();
        edit(&mut claim.path);
        claim
    }

    fn with(&self, statement: Statement) -> Claim {
        Claim {
            statement,
            path: self.path.clone(),
        }
    }

    /// Variants that must be refused: path nodes flipped, removed, repeated, swapped or
    /// added; the leaf or a root flipped; the leaf moved; roots or sizes swapped.
    fn tampered(&self, bits: &[usize]) -> Vec<(String, Claim)> {
        let mut out = Vec::new();
        let path = &self.path;
        for j in 0..path.len() {
            for &bit in bits {
                let claim = self.with_path(|p| flip(&mut p[j], bit));
                out.push((format!("path[{j}] bit {bit} flipped"), claim));
            }
            out.push((
                format!("path[{j}] removed"),
                self.with_path(|p| _ = p.remove(j)),
            ));
            out.push((
                format!("path[{j}] repeated"),
                self.with_path(|p| p.insert(j, p[j])),
            ));
            if path.get(j + 1).is_some_and(|next| *next != path[j]) {
                let claim = self.with_path(|p| p.swap(j, j + 1));
                out.push((format!("path[{j}] and path[{}] swapped", j + 1), claim));
            }
        }
        for j in 0..=path.len() {
            let claim = self.with_path(|p| p.insert(j, [0xab; 32]));
            out.push((format!("a stranger inserted at {j}"), claim));
        }
        for which in 0..2 {
            for &bit in bits {
                let mut claim = self.clone();
                let hashes = match &mut claim.statement {
                    Statement::Inclusion { leaf, root, .. } => [leaf, root],
                    Statement::Consistency {
                        old_root, new_root, ..
                    } => [old_root, new_root],
                };
                flip(hashes[which], bit);
                out.push((format!("statement hash {which} bit {bit} flipped"), claim));
            }
        }
        match self.statement {
            Statement::Inclusion {
                leaf,
                index,
                size,
                root,
            } => {
                out.push(("the root appended".into(), self.with_path(|p| p.push(root))));
                out.push((
                    "the leaf prepended".into(),
                    self.with_path(|p| p.insert(0, leaf)),
                ));
                let moves = [
                    index.checked_sub(1),
                    index.checked_add(1),
                    Some(index ^ 1),
                    Some(index ^ 2),
                    index.checked_add(size),
                    Some(u64::MAX),
                ];
                for other in moves.into_iter().flatten().filter(|i| *i != index) {
                    let moved = inclusion(leaf, other, size, root);
                    out.push((format!("index {other}"), self.with(moved)));
                }
            }
            Statement::Consistency {
                old_size,
                new_size,
                old_root,
                new_root,
            } => {
                let claim = self.with_path(|p| p.push(new_root));
                out.push(("the new root appended".into(), claim));
                let claim = self.with_path(|p| p.insert(0, old_root));
                out.push(("the old root prepended".into(), claim));
                if old_root != new_root {
                    let swapped = consistency(old_size, new_size, new_root, old_root);
                    out.push(("roots swapped".into(), self.with(swapped)));
                }
                if old_size != new_size {
                    let swapped = consistency(new_size, old_size, old_root, new_root);
                    out.push(("sizes swapped".into(), self.with(swapped)));
                }
            }
        }
        out
    }

    /// The claim with other tree sizes. A root does not commit to its tree's size (a signed
    /// tree head does), so a few of these verify: exactly those the naive verifier accepts,
    /// where the proof has the same shape for both sizes.
    fn resized(&self) -> Vec<(String, Claim)> {
        let others = |n: u64| {
            let near = [n.checked_sub(1), n.checked_add(1), n.checked_mul(2)];
            [Some(0), Some(n / 2), Some(u64::MAX)]
                .into_iter()
                .chain(near)
                .flatten()
                .filter(move |other| *other != n)
        };
        match self.statement {
            Statement::Inclusion {
                leaf,
                index,
                size,
                root,
            } => others(size)
                .map(|size| {
                    let resized = inclusion(leaf, index, size, root);
                    (format!("tree size {size}"), self.with(resized))
                })
                .collect(),
            Statement::Consistency {
                old_size,
                new_size,
                old_root,
                new_root,
            } => {
                let resized = |old_size, new_size| {
                    let statement = consistency(old_size, new_size, old_root, new_root);
                    (
                        format!("sizes {old_size}, {new_size}"),
                        self.with(statement),
                    )
                };
                let old = others(old_size).map(|old_size| resized(old_size, new_size));
                old.chain(others(new_size).map(|new_size| resized(old_size, new_size)))
                    .collect()
            }
        }
    }
}

/// The one check: the verifier's verdict on `claim` is `expect` and the naive verifier
/// agrees; a claim that holds stops holding when tampered with, and when resized is
/// judged as the naive verifier judges it.
fn check<H: MerkleHasher>(
    hasher: &H,
    label: &str,
    claim: &Claim,
    expect: &Expect,
    tampering: Tampering,
) {
    let verdict = claim.verify(hasher);
    match expect {
        Expect::Holds => assert_eq!(verdict, Ok(()), "{label}: {claim:?}"),
        Expect::Refused => assert!(verdict.is_err(), "{label}: accepted {claim:?}"),
        Expect::RefusedWith(error) => {
            assert_eq!(verdict.as_ref(), Err(error), "{label}: {claim:?}")
        }
    }
    let naive = claim.naive_verdict(hasher);
    assert_eq!(
        naive,
        verdict.is_ok(),
        "{label}: the naive verifier disagrees"
    );
    if *expect != Expect::Holds || tampering == Tampering::None {
        return;
    }
    for (change, variant) in claim.tampered(&tampering.bits()) {
        let verdict = variant.verify(hasher);
        assert!(verdict.is_err(), "{label}, {change}: accepted {variant:?}");
    }
    for (change, variant) in claim.resized() {
        let verdict = variant.verify(hasher);
        let naive = variant.naive_verdict(hasher);
        assert_eq!(
            verdict.is_ok(),
            naive,
            "{label}, {change}: {verdict:?} for {variant:?}"
        );
    }
}

/// Checks every root, inclusion proof and consistency proof of every size of `tree`
/// against the RFC's definitions.
fn check_every_proof<H: MerkleHasher>(
    label: &str,
    tree: &MerkleTree<H>,
    leaves: &[NodeHash],
    tampering: Tampering,
) {
    let hasher = tree.hasher();
    for size in 0..=tree.len() {
        let prefix = &leaves[..at(size)];
        let root = naive_root(hasher, prefix);
        assert_eq!(tree.root_at(size), Ok(root), "{label}: root of {size}");
        for index in 0..size {
            let path = tree.inclusion_proof(index, size).expect("leaf within size");
            assert_eq!(path, naive_path(hasher, at(index), prefix), "{label}: PATH");
            let leaf = leaves[at(index)];
            let statement = inclusion(leaf, index, size, root);
            let claim = Claim { statement, path };
            let label = format!("{label}: leaf {index} of {size}");
            check(hasher, &label, &claim, &Expect::Holds, tampering);
        }
        for old_size in 1..=size {
            let path = tree.consistency_proof(old_size, size).expect("valid sizes");
            let expected = naive_subproof(hasher, at(old_size), prefix, true);
            assert_eq!(path, expected, "{label}: PROOF({old_size}, D[{size}])");
            let old_root = naive_root(hasher, &prefix[..at(old_size)]);
            let statement = consistency(old_size, size, old_root, root);
            let claim = Claim { statement, path };
            let label = format!("{label}: {old_size} to {size}");
            check(hasher, &label, &claim, &Expect::Holds, tampering);
        }
    }
}

/// Checks published proofs over `leaves`: each is what the tree generates, and holds.
/// `path_of` reads a path entry (a hash, or a node name of the worked example).
fn check_published_proofs(
    leaves: &[NodeHash],
    proofs: &Proofs,
    path_of: impl Fn(&String) -> NodeHash,
) {
    let tree = MerkleTree::from_leaf_hashes(Sha256Hasher, leaves.iter().copied());
    let root = |size| tree.root_at(size).expect("within the tree");
    let default_size = |size| if size == 0 { proofs.tree_size } else { size };
    for proof in &proofs.inclusion {
        let (index, size) = (proof.leaf_index, default_size(proof.tree_size));
        let path: Vec<NodeHash> = proof.path.iter().map(&path_of).collect();
        let label = format!("leaf {index} of {size}");
        assert_eq!(
            tree.inclusion_proof(index, size),
            Ok(path.clone()),
            "{label}"
        );
        let leaf = leaves[at(index)];
        let root = root(size);
        let statement = inclusion(leaf, index, size, root);
        let claim = Claim { statement, path };
        check(
            &Sha256Hasher,
            &label,
            &claim,
            &Expect::Holds,
            Tampering::EveryBit,
        );
    }
    for proof in &proofs.consistency {
        let (old_size, new_size) = (proof.size1, default_size(proof.size2));
        let path: Vec<NodeHash> = proof.path.iter().map(&path_of).collect();
        let label = format!("PROOF({old_size}, D[{new_size}])");
        assert_eq!(
            tree.consistency_proof(old_size, new_size),
            Ok(path.clone()),
            "{label}"
        );
        let (old_root, new_root) = (root(old_size), root(new_size));
        let statement = consistency(old_size, new_size, old_root, new_root);
        let claim = Claim { statement, path };
        check(
            &Sha256Hasher,
            &label,
            &claim,
            &Expect::Holds,
            Tampering::EveryBit,
        );
    }
}

/// Checks transparency-dev probes. A probe whose byte strings are not all 32 bytes long is
/// refused where a caller would refuse it, by [`hash_from_slice`].
fn check_probes(json: &str) -> usize {
    let probes: Probes = parse(json);
    for probe in &probes.probes {
        let deviates = PROBE_DEVIATIONS.iter().any(|(file, _)| *file == probe.file);
        let expect = if probe.want_err || deviates {
            Expect::Refused
        } else {
            Expect::Holds
        };
        let is_inclusion = probe.file.starts_with("testdata/inclusion/");
        let ends = if is_inclusion {
            [&probe.leaf_hash, &probe.root]
        } else {
            [&probe.root1, &probe.root2]
        };
        let hashes = ends.into_iter().chain(&probe.proof);
        let parsed: Result<Vec<NodeHash>, _> = hashes.map(|s| hash_from_slice(&unhex(s))).collect();
        let Ok(parsed) = parsed else {
            assert_eq!(expect, Expect::Refused, "{}: {parsed:?}", probe.file);
            continue;
        };
        let [first, second, path @ ..] = parsed.as_slice() else {
            unreachable!("two ends were parsed");
        };
        let statement = if is_inclusion {
            inclusion(*first, probe.leaf_idx, probe.tree_size, *second)
        } else {
            consistency(probe.size1, probe.size2, *first, *second)
        };
        let claim = Claim {
            statement,
            path: path.to_vec(),
        };
        check(
            &Sha256Hasher,
            &probe.file,
            &claim,
            &expect,
            Tampering::EveryBit,
        );
    }
    probes.probes.len()
}

// ---- tests -------------------------------------------------------------------------------

#[test]
fn sha256_tree_hashes_match_the_rfc6962_vectors() {
    let vectors: TreeVectors = parse(SHA256_TREE);
    let leaves = leaf_hashes(&Sha256Hasher, &vectors.leaf_inputs);
    let tree = MerkleTree::from_leaf_hashes(Sha256Hasher, leaves.iter().copied());
    for (size, want) in vectors.root_hashes_by_size.iter().enumerate() {
        let (want, prefix) = (node(want), &leaves[..size]);
        let grown = MerkleTree::from_leaf_hashes(Sha256Hasher, prefix.iter().copied());
        assert_eq!(tree.root_at(to_u64(size)), Ok(want), "root_at({size})");
        assert_eq!(grown.root(), want, "root() after {size} appends");
        let streamed = root_from_leaf_hashes(&Sha256Hasher, prefix.iter().copied());
        assert_eq!(streamed, want, "root_from_leaf_hashes of {size}");
        assert_eq!(
            naive_root(&Sha256Hasher, prefix),
            want,
            "naive root of {size}"
        );
    }
    // The stored complete subtrees are exactly the published node hashes.
    let levels: Vec<Vec<NodeHash>> = vectors
        .node_hashes_by_level
        .iter()
        .map(|l| nodes(l))
        .collect();
    assert_eq!(tree.levels, levels);
    for (index, leaf) in leaves.iter().enumerate() {
        assert_eq!(tree.leaf_hash(to_u64(index)), Ok(*leaf));
    }
}

#[test]
fn sha256_known_proofs_are_generated_and_hold() {
    let vectors: TreeVectors = parse(SHA256_TREE);
    let leaves = leaf_hashes(&Sha256Hasher, &vectors.leaf_inputs);
    check_published_proofs(&leaves, &parse(SHA256_PROOFS), |hash| node(hash));
}

#[test]
fn rfc9162_worked_example_proofs_are_generated_and_hold() {
    let vectors: TreeVectors = parse(SHA256_TREE);
    let example: Proofs = parse(WORKED_EXAMPLE);
    let leaves = leaf_hashes(&Sha256Hasher, &vectors.leaf_inputs);
    let leaves = &leaves[..at(example.tree_size)];
    let named = |name: &String| {
        let [start, end] = example.nodes[name];
        naive_root(&Sha256Hasher, &leaves[start..end])
    };
    check_published_proofs(leaves, &example, named);
}

#[test]
fn transparency_dev_inclusion_probes() {
    assert_eq!(check_probes(INCLUSION_PROBES), 98);
}

#[test]
fn transparency_dev_consistency_probes() {
    assert_eq!(check_probes(CONSISTENCY_PROBES), 98);
}

#[test]
fn probe_deviations_are_still_in_the_vectors() {
    let probes: Probes = parse(CONSISTENCY_PROBES);
    for (file, why) in PROBE_DEVIATIONS {
        let probe = probes.probes.iter().find(|p| p.file == *file);
        assert!(probe.is_some_and(|p| !p.want_err), "{file} ({why})");
    }
}

#[test]
fn sha256_every_proof_of_every_tree_up_to_64_leaves() {
    // Without tampering: SHA-256 costs about 8 µs a hash in a debug build. The BLAKE3
    // tests below tamper with every claim of the same shapes.
    let leaves = generated_leaves(&Sha256Hasher, 64);
    let mut tree = MerkleTree::new(Sha256Hasher);
    for leaf in &leaves {
        tree.push_leaf_hash(*leaf);
    }
    check_every_proof("sha256", &tree, &leaves, Tampering::None);
}

#[test]
fn blake3_every_proof_of_every_tree_up_to_64_leaves() {
    let leaves = generated_leaves(&Blake3Hasher, 64);
    let tree = MerkleTree::from_leaf_hashes(Blake3Hasher, leaves.iter().copied());
    check_every_proof("blake3", &tree, &leaves, Tampering::Sampled);
}

#[test]
fn blake3_every_bit_of_every_proof_up_to_16_leaves() {
    let leaves = generated_leaves(&Blake3Hasher, 16);
    let tree = MerkleTree::from_leaf_hashes(Blake3Hasher, leaves.iter().copied());
    check_every_proof("blake3", &tree, &leaves, Tampering::EveryBit);
}

#[test]
fn blake3_roots_match_the_regression_vector() {
    let vectors: TreeVectors = parse(BLAKE3_ROOTS);
    let mut tree = MerkleTree::new(Blake3Hasher);
    for (size, want) in vectors.root_hashes_by_size.iter().enumerate() {
        assert_eq!(tree.root(), node(want), "BLAKE3 root of {size}");
        if let Some(input) = vectors.leaf_inputs.get(size) {
            assert_eq!(tree.push_leaf(&unhex(input)), to_u64(size));
        }
    }
}

#[test]
fn blake3_proofs_in_a_large_tree() {
    // Sizes around powers of two, where the shape changes, in a tree too large for the
    // naive definitions to be checked everywhere.
    let total: u64 = (1 << 13) + 5;
    let leaves = generated_leaves(&Blake3Hasher, total);
    let tree = MerkleTree::from_leaf_hashes(Blake3Hasher, leaves.iter().copied());
    let sizes: Vec<u64> = (0..14)
        .flat_map(|bit| [(1 << bit) - 1, 1 << bit, (1 << bit) + 1])
        .chain([total - 1, total])
        .filter(|size| (1..=total).contains(size))
        .collect();
    let root = |size| tree.root_at(size).expect("within the tree");
    for &size in &sizes {
        let prefix = leaves[..at(size)].iter().copied();
        assert_eq!(root(size), root_from_leaf_hashes(&Blake3Hasher, prefix));
        for index in [0, size / 3, size / 2, size - 1] {
            let statement = inclusion(leaves[at(index)], index, size, root(size));
            let path = tree.inclusion_proof(index, size).expect("within size");
            let claim = Claim { statement, path };
            let label = format!("leaf {index} of {size}");
            check(
                &Blake3Hasher,
                &label,
                &claim,
                &Expect::Holds,
                Tampering::Sampled,
            );
        }
        for old_size in sizes.iter().copied().filter(|old| *old <= size).step_by(4) {
            let statement = consistency(old_size, size, root(old_size), root(size));
            let path = tree.consistency_proof(old_size, size).expect("valid sizes");
            let claim = Claim { statement, path };
            let label = format!("{old_size} to {size}");
            check(
                &Blake3Hasher,
                &label,
                &claim,
                &Expect::Holds,
                Tampering::Sampled,
            );
        }
    }
}

#[test]
fn generation_refusals_name_the_problem() {
    let tree = MerkleTree::from_leaf_hashes(Blake3Hasher, generated_leaves(&Blake3Hasher, 8));
    let out_of_range = |index, size| MerkleError::IndexOutOfRange { index, size };
    let beyond = |size| MerkleError::SizeBeyondTree { size, len: 8 };
    let backwards = |old_size, new_size| MerkleError::SizesOutOfOrder { old_size, new_size };
    let cases = [
        (
            "leaf at the size",
            tree.inclusion_proof(5, 5),
            out_of_range(5, 5),
        ),
        (
            "leaf of the empty tree",
            tree.inclusion_proof(0, 0),
            out_of_range(0, 0),
        ),
        ("inclusion beyond", tree.inclusion_proof(0, 9), beyond(9)),
        (
            "consistency beyond",
            tree.consistency_proof(3, u64::MAX),
            beyond(u64::MAX),
        ),
        ("backwards", tree.consistency_proof(6, 5), backwards(6, 5)),
        (
            "from empty",
            tree.consistency_proof(0, 5),
            MerkleError::EmptyOldTree,
        ),
        (
            "empty to empty",
            tree.consistency_proof(0, 0),
            MerkleError::EmptyOldTree,
        ),
    ];
    for (label, got, error) in cases {
        assert_eq!(got, Err(error), "{label}");
    }
    assert_eq!(tree.consistency_proof(5, 5), Ok(Vec::new()));
    assert_eq!(tree.root_at(9), Err(beyond(9)));
    assert_eq!(tree.leaf_hash(8), Err(out_of_range(8, 8)));
    assert_eq!(
        MerkleTree::new(Blake3Hasher).root(),
        *blake3::hash(b"").as_bytes()
    );
}

#[test]
fn verification_refusals_name_the_problem() {
    let leaves = generated_leaves(&Blake3Hasher, 8);
    let tree = MerkleTree::from_leaf_hashes(Blake3Hasher, leaves.iter().copied());
    let (root, root5, stranger) = (tree.root(), tree.root_at(5).expect("within"), [7; 32]);
    let path = tree.inclusion_proof(2, 5).expect("within the tree");
    let extension = tree.consistency_proof(5, 8).expect("valid sizes");
    let included = |index, size, path: &[NodeHash], root| Claim {
        statement: inclusion(leaves[2], index, size, root),
        path: path.to_vec(),
    };
    let extends = |old_size, new_size, old_root, new_root, path: &[NodeHash]| Claim {
        statement: consistency(old_size, new_size, old_root, new_root),
        path: path.to_vec(),
    };
    let length = |expected, actual| MerkleError::WrongProofLength { expected, actual };
    let longer = [path.clone(), vec![stranger]].concat();
    let cases = [
        (
            "index at the size",
            included(5, 5, &path, root5),
            MerkleError::IndexOutOfRange { index: 5, size: 5 },
        ),
        (
            "index in the empty tree",
            included(0, 0, &[], root5),
            MerkleError::IndexOutOfRange { index: 0, size: 0 },
        ),
        (
            "last leaf of the largest tree",
            included(u64::MAX - 1, u64::MAX, &path, root5),
            length(63, 3),
        ),
        (
            "path too long",
            included(2, 5, &longer, root5),
            length(3, 4),
        ),
        (
            "path too short",
            included(2, 5, &path[..2], root5),
            length(3, 2),
        ),
        (
            "a path for one leaf",
            included(0, 1, &[stranger], leaves[2]),
            length(0, 1),
        ),
        (
            "another root",
            included(2, 5, &path, root),
            MerkleError::RootMismatch,
        ),
        (
            "consistency backwards",
            extends(8, 5, root, root5, &extension),
            MerkleError::SizesOutOfOrder {
                old_size: 8,
                new_size: 5,
            },
        ),
        (
            "from empty",
            extends(0, 8, stranger, root, &[]),
            MerkleError::EmptyOldTree,
        ),
        (
            "from empty to empty",
            extends(0, 0, stranger, stranger, &[]),
            MerkleError::EmptyOldTree,
        ),
        (
            "an empty path",
            extends(5, 8, root5, root, &[]),
            length(4, 0),
        ),
        (
            "same size, a path",
            extends(5, 5, root5, root5, &[stranger]),
            length(0, 1),
        ),
        (
            "same size, two roots",
            extends(5, 5, root5, root, &[]),
            MerkleError::NewRootMismatch,
        ),
        (
            "another old root",
            extends(5, 8, stranger, root, &extension),
            MerkleError::OldRootMismatch,
        ),
        (
            "another new root",
            extends(5, 8, root5, stranger, &extension),
            MerkleError::NewRootMismatch,
        ),
        (
            "the largest sizes",
            extends(u64::MAX - 1, u64::MAX, root5, root, &extension),
            length(64, 4),
        ),
    ];
    for (label, claim, error) in cases {
        let expect = Expect::RefusedWith(error);
        check(&Blake3Hasher, label, &claim, &expect, Tampering::Sampled);
    }
    let holds = [
        ("same size, same roots", extends(5, 5, root5, root5, &[])),
        ("one leaf", included(0, 1, &[], leaves[2])),
    ];
    for (label, claim) in holds {
        check(
            &Blake3Hasher,
            label,
            &claim,
            &Expect::Holds,
            Tampering::EveryBit,
        );
    }
}

#[test]
fn hash_from_slice_takes_exactly_32_bytes() {
    for len in [0, 1, 31, 33, 64] {
        assert_eq!(
            hash_from_slice(&vec![0; len]),
            Err(MerkleError::HashLength { len })
        );
    }
    assert_eq!(hash_from_slice(&[9; 32]), Ok([9; 32]));
}

/// Leaves served back from a copy, counting the reads.
struct Served {
    leaves: Vec<NodeHash>,
    reads: std::sync::atomic::AtomicU64,
}

impl LeafSource for Served {
    fn leaf_hashes(&self, start: u64, end: u64) -> Result<Vec<NodeHash>, String> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.leaves
            .get(at(start)..at(end))
            .map(<[NodeHash]>::to_vec)
            .ok_or_else(|| format!("no leaves {start}..{end}"))
    }
}

#[test]
fn a_tree_keeping_only_its_top_gives_the_roots_and_proofs_of_the_whole_tree() {
    let hasher = Blake3Hasher;
    for floor in [1, 2, 3] {
        let all = generated_leaves(&hasher, 70);
        let source = std::sync::Arc::new(Served {
            leaves: all.clone(),
            reads: Default::default(),
        });
        let mut full = MerkleTree::new(hasher);
        let mut kept = MerkleTree::new(hasher);
        // Given its floor half-way, as a ledger opened from a replay is.
        for (i, leaf) in all.iter().enumerate() {
            if i == 20 {
                kept.keep_lower_levels_in(floor, source.clone());
            }
            full.push_leaf_hash(*leaf);
            kept.push_leaf_hash(*leaf);
            let n = full.len();
            // Told now and then which leaves the source can give (a ledger: after each sync).
            if i % 3 == 0 {
                kept.drop_lower_nodes(n);
            }
            assert_eq!(kept.len(), n);
            assert_eq!(kept.root(), full.root(), "floor {floor}, size {n}");
            // The last leaf is always kept, so opening from a snapshot can check its anchor.
            assert_eq!(kept.kept_node(0, n - 1), Some(*leaf));
        }
        let n = full.len();
        for size in 1..=n {
            assert_eq!(kept.root_at(size), full.root_at(size));
            for index in 0..size {
                assert_eq!(
                    kept.inclusion_proof(index, size),
                    full.inclusion_proof(index, size),
                    "floor {floor}, leaf {index} of {size}"
                );
            }
            for old in 1..=size {
                assert_eq!(
                    kept.consistency_proof(old, size),
                    full.consistency_proof(old, size)
                );
            }
            assert_eq!(kept.leaf_hash(size - 1), full.leaf_hash(size - 1));
        }
        let reads = source.reads.load(std::sync::atomic::Ordering::Relaxed);
        assert!(reads > 0, "dropped nodes were read back");
        // Below the floor, only the last block's nodes are kept.
        let kept_nodes: usize = kept.levels().iter().map(Vec::len).sum();
        let full_nodes: usize = full.levels().iter().map(Vec::len).sum();
        assert!(kept_nodes < full_nodes, "{kept_nodes} of {full_nodes}");
        for height in 0..floor {
            assert!(kept.levels()[height as usize].len() <= 1 << (floor - height));
        }
        // Saved and loaded back (as a snapshot does), it is the same tree.
        kept.drop_lower_nodes(n);
        let loaded =
            MerkleTree::from_kept_levels(hasher, floor, n, kept.pruned(), kept.levels().to_vec())
                .unwrap();
        assert_eq!(loaded.levels(), kept.levels());
        assert_eq!(loaded.root(), full.root());
        assert!(
            MerkleTree::from_kept_levels(
                hasher,
                floor,
                n + 1,
                kept.pruned(),
                kept.levels().to_vec()
            )
            .is_err()
        );
        // Without its source, a dropped node is an error, never a wrong answer.
        assert!(matches!(
            loaded.inclusion_proof(0, n),
            Err(MerkleError::Unavailable { .. })
        ));
    }
}
