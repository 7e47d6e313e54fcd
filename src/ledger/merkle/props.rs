//! Property tests of the tree's proofs (proptest): for random trees, every proof the tree makes
//! verifies, and a single flipped bit anywhere in what the verifier is given — a proof hash, the
//! leaf hash, either root — makes it fail.

use proptest::prelude::*;

use super::*;

/// Leaves 1..=300 with distinct random data, so that no two leaf hashes collide.
fn tree_of(n: u64, seed: u64) -> MerkleTree<Blake3Hasher> {
    let mut tree = MerkleTree::new(Blake3Hasher);
    for i in 0..n {
        let mut data = [0u8; 16];
        data[..8].copy_from_slice(&seed.to_le_bytes());
        data[8..].copy_from_slice(&i.to_le_bytes());
        tree.push_leaf(&data);
    }
    tree
}

fn flip(hash: &NodeHash, bit: usize) -> NodeHash {
    let mut out = *hash;
    out[bit / 8] ^= 1 << (bit % 8);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_inclusion_proof_verifies_and_every_single_bit_flip_fails(
        n in 1u64..300,
        pick in any::<u64>(),
        seed in any::<u64>(),
    ) {
        let tree = tree_of(n, seed);
        let size = 1 + pick % n;
        let index = (pick / 7) % size;
        let root = tree.root_at(size).unwrap();
        let leaf = tree.leaf_hash(index).unwrap();
        let proof = tree.inclusion_proof(index, size).unwrap();
        prop_assert_eq!(verify_inclusion(&Blake3Hasher, &leaf, index, size, &proof, &root), Ok(()));
        for bit in 0..256 {
            prop_assert!(verify_inclusion(&Blake3Hasher, &flip(&leaf, bit), index, size, &proof, &root).is_err());
            prop_assert!(verify_inclusion(&Blake3Hasher, &leaf, index, size, &proof, &flip(&root, bit)).is_err());
            for i in 0..proof.len() {
                let mut bad = proof.clone();
                bad[i] = flip(&bad[i], bit);
                prop_assert!(verify_inclusion(&Blake3Hasher, &leaf, index, size, &bad, &root).is_err());
            }
        }
        // A proof with a hash dropped or added is refused.
        if !proof.is_empty() {
            prop_assert!(verify_inclusion(&Blake3Hasher, &leaf, index, size, &proof[1..], &root).is_err());
        }
        let mut longer = proof.clone();
        longer.push(root);
        prop_assert!(verify_inclusion(&Blake3Hasher, &leaf, index, size, &longer, &root).is_err());
    }

    #[test]
    fn every_consistency_proof_verifies_and_every_single_bit_flip_fails(
        n in 1u64..300,
        pick in any::<u64>(),
        seed in any::<u64>(),
    ) {
        let tree = tree_of(n, seed);
        let new_size = 1 + pick % n;
        let old_size = 1 + (pick / 7) % new_size;
        let old_root = tree.root_at(old_size).unwrap();
        let new_root = tree.root_at(new_size).unwrap();
        let proof = tree.consistency_proof(old_size, new_size).unwrap();
        prop_assert_eq!(
            verify_consistency(&Blake3Hasher, old_size, new_size, &old_root, &new_root, &proof),
            Ok(())
        );
        for bit in 0..256 {
            prop_assert!(verify_consistency(&Blake3Hasher, old_size, new_size, &flip(&old_root, bit), &new_root, &proof).is_err());
            prop_assert!(verify_consistency(&Blake3Hasher, old_size, new_size, &old_root, &flip(&new_root, bit), &proof).is_err());
            for i in 0..proof.len() {
                let mut bad = proof.clone();
                bad[i] = flip(&bad[i], bit);
                prop_assert!(verify_consistency(&Blake3Hasher, old_size, new_size, &old_root, &new_root, &bad).is_err());
            }
        }
    }

    #[test]
    fn a_tree_from_another_history_has_no_consistency_proof_that_verifies(
        n in 2u64..200,
        pick in any::<u64>(),
        seed in any::<u64>(),
    ) {
        // The same sizes, but the new tree's first leaves differ from the old one's (a fork):
        // its honest proof must not bridge the two roots.
        let old = tree_of(n, seed);
        let forked = tree_of(n, seed.wrapping_add(1));
        let new_size = 2 + pick % (n - 1);
        let old_size = 1 + (pick / 7) % (new_size - 1);
        let proof = forked.consistency_proof(old_size, new_size).unwrap();
        prop_assert!(verify_consistency(
            &Blake3Hasher,
            old_size,
            new_size,
            &old.root_at(old_size).unwrap(),
            &forked.root_at(new_size).unwrap(),
            &proof,
        ).is_err());
    }
}
