//! The memory index with real tantivy and the real potion-base-2M model: owner isolation (in
//! results and in scores), deletes (from results, and from the files after a purge), highlights
//! and matched terms, the boolean syntax, upserts, model checks, and bit-exact determinism.

use std::sync::{Arc, OnceLock};

use super::*;
use crate::embed::{Embedder, StaticEmbedder};

fn embedder() -> &'static StaticEmbedder {
    static E: OnceLock<StaticEmbedder> = OnceLock::new();
    E.get_or_init(|| StaticEmbedder::potion_base_2m().expect("model loads"))
}

fn doc(owner: &str, id: &str, content: &str) -> MemoryDocument {
    MemoryDocument {
        id: id.to_owned(),
        owner: owner.to_owned(),
        content: content.to_owned(),
        keywords: Vec::new(),
        sector: "episodic".to_owned(),
        created_at_ms: 1_700_000_000_000,
        // A session of its own: no neighbours unless a test gives them.
        session: id.to_owned(),
        position: 0,
    }
}

fn add(index: &mut MemoryIndex, d: &MemoryDocument) {
    let e = embedder().embed_one(&d.content).expect("embeds");
    index.upsert(d, Some(&e)).expect("stages");
}

const ALICE: &[(&str, &str)] = &[
    ("a1", "Alice: I adopted a puppy from the shelter last week"),
    ("a2", "Alice: we walked on the beach at sunset"),
    ("a3", "Alice: my red car broke down on the highway"),
    ("a4", "Alice: the puppy loves the beach"),
    ("a5", "Alice: I paint landscapes & portraits <in oil>"),
];

fn alice_index() -> MemoryIndex {
    let mut index = MemoryIndex::in_ram(MemoryIndexConfig::default()).expect("index");
    for (id, text) in ALICE {
        add(&mut index, &doc("alice", id, text));
    }
    index.commit().expect("commit");
    index
}

fn search(index: &MemoryIndex, owner: &str, text: &str, retrieval: Retrieval) -> MemoryResults {
    let e = embedder().embed_one(text).expect("embeds");
    index
        .search(&MemoryQuery {
            owner,
            text,
            embedding: Some(&e),
            limit: 10,
            signals: retrieval,
        })
        .expect("search")
}

fn ids(r: &MemoryResults) -> Vec<&str> {
    r.hits.iter().map(|h| h.id.as_str()).collect()
}

#[test]
fn an_owner_sees_only_its_memories_and_scores_ignore_other_owners() {
    let mut index = alice_index();
    let before = search(&index, "alice", "puppy beach", Retrieval::default());
    for i in 0..40 {
        add(
            &mut index,
            &doc(
                "bob",
                &format!("b{i}"),
                "Bob: my puppy on the beach, puppy puppy",
            ),
        );
    }
    index.commit().expect("commit");
    let after = search(&index, "alice", "puppy beach", Retrieval::default());
    assert!(
        ids(&after).iter().all(|id| id.starts_with('a')),
        "{:?}",
        ids(&after)
    );
    assert_eq!(ids(&before), ids(&after));
    let bits = |r: &MemoryResults| {
        r.hits
            .iter()
            .map(|h| (h.similarity.to_bits(), h.bm25.map(f32::to_bits)))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        bits(&before),
        bits(&after),
        "bob's memories changed alice's scores"
    );
    let bob = search(&index, "bob", "shelter", Retrieval::Lexical);
    assert!(
        bob.hits.is_empty(),
        "bob found alice's shelter: {:?}",
        ids(&bob)
    );
    let nobody = search(&index, "carol", "puppy", Retrieval::default());
    assert!(nobody.hits.is_empty());
    // The query syntax cannot reach another owner's memories either.
    let crafted = search(&index, "bob", "owner:alice shelter", Retrieval::Lexical);
    assert!(
        crafted.hits.iter().all(|h| h.id.starts_with('b')),
        "{:?}",
        ids(&crafted)
    );
    // Alone again (bob's documents deleted, not yet merged away), alice's search skips the
    // owner clause: the same answer, bit for bit.
    for i in 0..40 {
        index.delete("bob", &format!("b{i}"));
    }
    index.commit().expect("commit");
    let alone = search(&index, "alice", "puppy beach", Retrieval::default());
    assert_eq!(ids(&before), ids(&alone));
    assert_eq!(bits(&before), bits(&alone));
}

#[test]
fn a_deleted_memory_leaves_every_result() {
    let mut index = alice_index();
    let r = search(&index, "alice", "puppy shelter", Retrieval::default());
    assert_eq!(ids(&r).first(), Some(&"a1"));
    index.delete("alice", "a1");
    index.commit().expect("commit");
    for retrieval in [Retrieval::default(), Retrieval::Lexical, Retrieval::Vector] {
        let r = search(&index, "alice", "puppy shelter", retrieval);
        assert!(!ids(&r).contains(&"a1"), "{retrieval:?}: {:?}", ids(&r));
        assert!(!r.hits.is_empty(), "{retrieval:?} found nothing");
    }
}

#[test]
fn a_purge_leaves_no_bytes_of_a_deleted_memory_on_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = "zanzibarquokka";
    let mut index = MemoryIndex::in_dir(dir.path(), MemoryIndexConfig::default()).expect("index");
    for (id, text) in ALICE {
        add(&mut index, &doc("alice", id, text));
    }
    add(
        &mut index,
        &doc("alice", "s", &format!("Alice: the code word is {secret}")),
    );
    index.commit().expect("commit");
    // More segments, so the purge has to merge.
    add(&mut index, &doc("alice", "later", "Alice: one more memory"));
    index.commit().expect("commit");

    let on_disk = |needle: &str| -> bool {
        std::fs::read_dir(dir.path())
            .expect("read dir")
            .any(|entry| {
                let bytes = std::fs::read(entry.expect("entry").path()).unwrap_or_default();
                bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
            })
    };
    index.delete("alice", "s");
    index.commit().expect("commit");
    assert!(
        search(&index, "alice", secret, Retrieval::Lexical)
            .hits
            .is_empty()
    );
    assert!(
        on_disk(secret),
        "a delete alone leaves the text in its segment"
    );
    index.purge_deleted().expect("purge");
    assert!(!on_disk(secret), "the purge left the deleted text on disk");
    // The shorter memory ranks first (BM25 length normalization).
    let r = search(&index, "alice", "puppy", Retrieval::Lexical);
    assert_eq!(ids(&r), vec!["a4", "a1"]);
    drop(index);
    let reopened = MemoryIndex::in_dir(dir.path(), MemoryIndexConfig::default()).expect("reopen");
    assert_eq!(
        ids(&search(&reopened, "alice", "puppy", Retrieval::Lexical)),
        vec!["a4", "a1"]
    );
}

#[test]
fn hits_highlight_matches_and_name_matched_terms() {
    let index = alice_index();
    let r = search(&index, "alice", "adopting puppies", Retrieval::Lexical);
    let top = &r.hits[0];
    assert_eq!(top.id, "a1");
    assert!(
        top.highlight.contains("<b>adopted</b>"),
        "{}",
        top.highlight
    );
    assert!(top.highlight.contains("<b>puppy</b>"), "{}", top.highlight);
    assert_eq!(top.matched_terms, vec!["adopt", "puppi"]);
    let r = search(&index, "alice", "portraits", Retrieval::Lexical);
    assert_eq!(
        r.hits[0].highlight,
        // The fragment ends with its last word; the rest is escaped.
        "Alice: I paint landscapes &amp; <b>portraits</b> &lt;in oil"
    );
    // A vector-only hit without a matching word still shows its content, escaped.
    let r = search(&index, "alice", "canine companion", Retrieval::Vector);
    assert!(
        r.hits
            .iter()
            .all(|h| !h.highlight.is_empty() && h.matched_terms.is_empty())
    );
}

#[test]
fn boolean_syntax_and_phrases_are_honoured() {
    let index = alice_index();
    let q = |text| ids(&search(&index, "alice", text, Retrieval::Lexical)).join(",");
    assert_eq!(q("puppy AND beach"), "a4");
    assert_eq!(q("puppy NOT beach"), "a1");
    assert_eq!(q("puppy -beach"), "a1");
    assert_eq!(q("shelter OR highway"), "a3,a1"); // best first: a3 is shorter
    assert_eq!(q("\"red car\""), "a3");
    assert_eq!(q("\"car red\""), "");
    // Broken syntax is read leniently and reported, not refused.
    let r = search(&index, "alice", "puppy AND (beach", Retrieval::Lexical);
    assert!(!r.hits.is_empty());
    assert!(!r.warnings.is_empty() || ids(&r).contains(&"a4"));
}

#[test]
fn queries_tantivys_parser_reads_right_keep_its_hits_and_scores_bit_for_bit() {
    let mut index = alice_index();
    for i in 0..6 {
        let mut d = doc(
            "bob",
            &format!("b{i}"),
            "Bob: my puppy on the beach at sunset",
        );
        d.keywords = vec!["beach".to_owned(), "red car".to_owned()];
        add(&mut index, &d);
    }
    index.commit().expect("commit");
    let searcher = index.text.searcher();
    for owner in ["alice", "bob"] {
        let stats = index.text.owner_statistics(&searcher, owner);
        for text in [
            "puppy",
            "puppy beach",
            "adopting puppies",
            "\"red car\" highway",
            "puppy AND beach",
            "shelter OR highway",
            "puppy -beach",
            "+puppy beach",
            "puppy NOT beach",
            "red-car",
            "what did Alice paint?",
            "Alice's puppy",
            "what's the red car's problem",
            "at 10:30 on the beach",
            "e-mail from the shelter",
        ] {
            let ours = index.text.parse(text);
            let theirs = index.text.parse_with_tantivy(text);
            let run = |q| {
                index
                    .text
                    .search(&searcher, &stats, owner, q, 10)
                    .expect("search")
                    .into_iter()
                    .map(|h| (h.id.to_string(), h.score.to_bits()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(run(&ours), run(&theirs), "{owner}: {text}");
        }
    }
}

#[test]
fn an_upsert_replaces_the_memory_of_the_same_id() {
    let mut index = alice_index();
    add(
        &mut index,
        &doc("alice", "a3", "Alice: I sold the old bicycle"),
    );
    index.commit().expect("commit");
    assert!(
        search(&index, "alice", "car", Retrieval::Lexical)
            .hits
            .is_empty()
    );
    assert_eq!(
        ids(&search(&index, "alice", "bicycle", Retrieval::Lexical)),
        vec!["a3"]
    );
}

#[test]
fn vectors_of_another_model_are_refused() {
    let mut index = alice_index();
    let other = Embedding::new(Arc::from("other/model"), vec![0.5; 64]);
    let refused = index.search(&MemoryQuery {
        owner: "alice",
        text: "puppy",
        embedding: Some(&other),
        limit: 5,
        signals: Retrieval::default(),
    });
    assert!(
        matches!(refused, Err(IndexError::ModelMismatch { .. })),
        "{refused:?}"
    );
    assert!(matches!(
        index.upsert(&doc("alice", "x", "Alice: hi"), Some(&other)),
        Err(IndexError::ModelMismatch { .. })
    ));
}

#[test]
fn the_same_memories_give_the_same_scores_bit_for_bit_whatever_the_order_and_segments() {
    let forward = alice_index();
    let mut backward = MemoryIndex::in_ram(MemoryIndexConfig::default()).expect("index");
    for (id, text) in ALICE.iter().rev() {
        add(&mut backward, &doc("alice", id, text));
        backward.commit().expect("commit"); // one segment per memory
    }
    for text in [
        "puppy beach",
        "red car highway",
        "what did Alice paint?",
        "sunset walk",
    ] {
        for retrieval in [Retrieval::default(), Retrieval::Lexical, Retrieval::Vector] {
            let a = search(&forward, "alice", text, retrieval);
            let b = search(&backward, "alice", text, retrieval);
            let key = |r: &MemoryResults| {
                r.hits
                    .iter()
                    .map(|h| {
                        (
                            h.id.clone(),
                            h.similarity.to_bits(),
                            h.cosine.map(f32::to_bits),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(key(&a), key(&b), "{text} / {retrieval:?}");
            assert!(a.hits.iter().all(|h| (0.0..=1.0).contains(&h.similarity)));
        }
    }
}

#[test]
fn kept_statistics_equal_the_counts_over_the_postings() {
    let check = |index: &MemoryIndex| {
        let searcher = index.text.searcher();
        let parsed = index.text.parse(
            "puppy beach bicycle old sold staged alice bob shelter keywords:beach sector:episodic",
        );
        let terms = index.text.query_terms(&parsed);
        assert!(terms.len() > 10, "{terms:?}");
        for owner in ["alice", "bob", "carol"] {
            let stats = index.text.owner_statistics(&searcher, owner);
            assert_eq!(
                stats.docs,
                index.text.counted_docs(&searcher, owner),
                "{owner}"
            );
            for term in &terms {
                use tantivy::query::Bm25StatisticsProvider;
                assert_eq!(
                    stats.doc_freq(term).expect("kept"),
                    stats.counted_doc_freq(term).expect("counted"),
                    "{owner}: {term:?}"
                );
            }
        }
    };
    let mut index = alice_index();
    for i in 0..12 {
        let mut d = doc("bob", &format!("b{i}"), "Bob: my puppy on the beach");
        d.keywords = vec!["beach".to_owned(), "old puppy".to_owned()];
        add(&mut index, &d);
    }
    index.commit().expect("commit");
    check(&index);
    // Replaced, deleted and staged memories count once committed, not before.
    add(
        &mut index,
        &doc("alice", "a3", "Alice: I sold the old bicycle on the beach"),
    );
    index.delete("alice", "a2");
    index.delete("bob", "b3");
    index.delete("bob", "nobody");
    add(
        &mut index,
        &doc("alice", "a6", "Alice: staged, then committed"),
    );
    check(&index);
    index.commit().expect("commit");
    check(&index);
    index.purge_deleted().expect("purge");
    check(&index);
}

/// A conversation: the answer shares no word with the question; the turn before it asked.
const TALK: &[(&str, &str, u64)] = &[
    ("t1", "Bob: did you ever go sailing on the lake?", 1),
    ("t2", "Alice: yes, every Sunday with my father", 2),
    ("t3", "Bob: I bought new running shoes today", 3),
    ("t4", "Alice: my garden tomatoes are ripe", 4),
];

fn talk_index(order: &[usize]) -> MemoryIndex {
    let mut index = MemoryIndex::in_ram(MemoryIndexConfig::default()).expect("index");
    for &i in order {
        let (id, text, position) = TALK[i];
        let mut d = doc("alice", id, text);
        d.session = "day-1".to_owned();
        d.position = position;
        add(&mut index, &d);
    }
    index.commit().expect("commit");
    index
}

#[test]
fn a_memory_borrows_context_from_its_session_neighbours_in_any_feeding_order() {
    let question = "Who goes sailing on the lake with Alice?";
    let index = talk_index(&[0, 1, 2, 3]);
    let plain = Fusion::DEFAULT.with_context(0.0).expect("weighted");
    let without = search(&index, "alice", question, Retrieval::Hybrid(plain));
    let with = search(&index, "alice", question, Retrieval::default());
    // Lexically t2 matches only "Alice", as t4 does; its neighbour t1 matches the question.
    assert_eq!(ids(&with)[..2], ["t1", "t2"], "{:?}", ids(&with));
    // t2's similarity is its own plus half of t1's, over 1.5.
    let s =
        |r: &MemoryResults, id: &str| r.hits.iter().find(|h| h.id == id).expect("hit").similarity;
    let expected = (s(&without, "t2") + 0.5 * s(&without, "t1").max(s(&without, "t3"))) / 1.5;
    assert!((s(&with, "t2") - expected).abs() < 1e-12);

    // Fed in another order, the same neighbours and the same scores, bit for bit.
    let shuffled = talk_index(&[3, 1, 0, 2]);
    let again = search(&shuffled, "alice", question, Retrieval::default());
    let bits = |r: &MemoryResults| {
        r.hits
            .iter()
            .map(|h| (h.id.clone(), h.similarity.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&with), bits(&again));

    // Deleted, t1 lends nothing: t2 has no neighbour before it.
    let mut index = talk_index(&[0, 1, 2, 3]);
    index.delete("alice", "t1");
    index.commit().expect("commit");
    let after = search(&index, "alice", question, Retrieval::default());
    let own = search(&index, "alice", question, Retrieval::Hybrid(plain));
    assert!(!ids(&after).contains(&"t1"));
    let lone = (s(&own, "t2") + 0.5 * s(&own, "t3")) / 1.5;
    assert!(
        (s(&after, "t2") - lone).abs() < 1e-9,
        "{} vs {lone}",
        s(&after, "t2")
    );
}

/// A directory index reopens only at the event its last commit was anchored at, and answers as
/// before, bit for bit, once its vectors and sessions are fed again.
#[test]
fn a_directory_index_reopens_at_its_anchor_only_and_answers_the_same() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = MemoryIndexConfig::default();
    let bits = |r: &MemoryResults| -> Vec<(String, u64)> {
        r.hits
            .iter()
            .map(|h| (h.id.clone(), h.similarity.to_bits()))
            .collect()
    };
    let before = {
        let mut index = MemoryIndex::in_dir(dir.path(), config).expect("index");
        for (id, text) in ALICE {
            add(&mut index, &doc("alice", id, text));
        }
        index.anchor_at(5, "e5");
        index.commit().expect("commit");
        bits(&search(
            &index,
            "alice",
            "puppy beach",
            Retrieval::default(),
        ))
    };
    assert!(!before.is_empty());
    assert!(
        MemoryIndex::reopen(dir.path(), config, 4, "e5")
            .expect("opens")
            .is_none(),
        "another seq"
    );
    assert!(
        MemoryIndex::reopen(dir.path(), config, 5, "another event at seq 5")
            .expect("opens")
            .is_none(),
        "another event"
    );
    let stemless = MemoryIndexConfig {
        analysis: TextAnalysis {
            stem: false,
            stop_words: false,
        },
    };
    assert!(
        MemoryIndex::reopen(dir.path(), stemless, 5, "e5")
            .expect("opens")
            .is_none(),
        "another analysis"
    );
    let empty = tempfile::tempdir().expect("tempdir");
    assert!(
        MemoryIndex::reopen(empty.path(), config, 5, "e5")
            .expect("opens")
            .is_none()
    );
    let mut index = MemoryIndex::reopen(dir.path(), config, 5, "e5")
        .expect("opens")
        .expect("anchored at 5");
    assert_eq!(index.live_documents(), ALICE.len() as u64);
    for (id, text) in ALICE {
        let d = doc("alice", id, text);
        let e = embedder().embed_one(&d.content).expect("embeds");
        index.adopt(&d, Some(&e)).expect("adopted");
    }
    let after = search(&index, "alice", "puppy beach", Retrieval::default());
    assert_eq!(bits(&after), before);
}

/// A state's memories as the derived index reads them: memories, an anchor and a journal of
/// changes (each with its event), trimmed from the front as a writer that feeds would trim it.
#[derive(Default)]
struct Held {
    memories: Vec<(MemoryDocument, Embedding)>,
    anchor: (u64, String),
    journal: Vec<(u64, String, Change)>,
    /// The anchor before the journal's first change; `None`: unknown.
    from: Option<(u64, String)>,
}

impl Held {
    fn store(&mut self, seq: u64, id: &str, text: &str) {
        let document = doc("alice", id, text);
        let embedding = embedder().embed_one(text).expect("embeds");
        self.memories.retain(|(d, _)| d.id != id);
        self.memories.push((document.clone(), embedding.clone()));
        self.changed(
            seq,
            Change::Upsert {
                document,
                embedding,
            },
        );
    }

    fn erase(&mut self, seq: u64, id: &str) {
        self.memories.retain(|(d, _)| d.id != id);
        let (owner, id) = ("alice".to_owned(), id.to_owned());
        self.changed(seq, Change::Erase { owner, id });
    }

    fn changed(&mut self, seq: u64, change: Change) {
        self.anchor = (seq, format!("hash-{seq}"));
        self.journal.push((seq, self.anchor.1.clone(), change));
    }

    /// What the writer does once the index is fed.
    fn forget(&mut self) {
        self.journal.clear();
        self.from = Some(self.anchor.clone());
    }
}

impl Source for Held {
    fn anchor(&self) -> (u64, &str) {
        (self.anchor.0, &self.anchor.1)
    }
    fn memories(&self) -> u64 {
        self.memories.len() as u64
    }
    fn each(
        &self,
        feed: &mut dyn FnMut(&MemoryDocument, &Embedding) -> Result<(), IndexError>,
    ) -> Result<(), IndexError> {
        self.memories.iter().try_for_each(|(d, e)| feed(d, e))
    }
    fn changes_since(&self, seq: u64, hash: &str) -> Option<Vec<(u64, String, Change)>> {
        let start = if self
            .from
            .as_ref()
            .is_some_and(|(s, h)| *s == seq && h == hash)
        {
            0
        } else {
            1 + self
                .journal
                .iter()
                .rposition(|(s, h, _)| *s == seq && h == hash)?
        };
        Some(self.journal[start..].to_vec())
    }
}

fn answer(index: &MemoryIndex, text: &str) -> Vec<(String, u64)> {
    search(index, "alice", text, Retrieval::default())
        .hits
        .into_iter()
        .map(|h| (h.id, h.similarity.to_bits()))
        .collect()
}

/// Fed by a writer after each change, caught up by its lends alone (a driver that feeds
/// nothing), or rebuilt from the memories: a lend answers the same, bit for bit; a state it
/// cannot follow from (a snapshot loaded) is built again, and a closed index lends nothing.
#[test]
fn a_derived_index_lends_the_state_it_is_derived_from_however_it_was_fed() {
    let fed = DerivedIndex::in_ram();
    let unfed = DerivedIndex::in_ram();
    let mut held = Held {
        from: Some((0, String::new())),
        ..Held::default()
    };
    let mut kept = Held::default();
    let steps: &[(u64, Option<&str>, &str)] = &[
        (
            1,
            Some("a1"),
            "Alice: I adopted a puppy from the shelter last week",
        ),
        (2, Some("a2"), "Alice: we walked on the beach at sunset"),
        (3, Some("a1"), "Alice: the puppy is a beagle now"),
        (4, None, "a2"),
        (5, Some("a3"), "Alice: my red car broke down on the highway"),
    ];
    for (seq, id, text) in steps {
        match id {
            Some(id) => {
                held.store(*seq, id, text);
                kept.store(*seq, id, text);
            }
            None => {
                held.erase(*seq, text);
                kept.erase(*seq, text);
            }
        }
        fed.feed(&kept);
        kept.forget();
        let rebuilt = DerivedIndex::in_ram();
        let fed_answer = answer(&fed.lend(&kept).expect("lends"), "puppy beach car");
        assert_eq!(
            answer(&unfed.lend(&held).expect("lends"), "puppy beach car"),
            fed_answer,
            "after {seq}"
        );
        assert_eq!(
            answer(&rebuilt.lend(&kept).expect("lends"), "puppy beach car"),
            fed_answer
        );
    }
    assert_eq!(fed.lend(&kept).expect("lends").live_documents(), 2);
    // A state it does not follow from (loaded from a snapshot: its journal's start unknown).
    let loaded = Held {
        memories: held.memories[..1].to_vec(),
        anchor: (9, "hash-9".into()),
        ..Held::default()
    };
    fed.feed(&loaded);
    assert_eq!(fed.lend(&loaded).expect("lends").live_documents(), 1);
    fed.close();
    assert!(matches!(fed.lend(&loaded), Err(IndexError::Closed)));
}
