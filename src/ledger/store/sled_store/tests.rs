//! Tests of the sled store on disk: batches across reopen, read-only views, letting go of reads,
//! frames and index records recovered at open, a cut index refused, the older layout copied
//! over, the lock, large events, and erased texts leaving no byte on disk.

use super::older_layouts::{
    LOG1, LOG1_END, LOG1_EVENTS, OLD_EVENTS, OLD_TEXT_FILE, OLD_TEXT_INDEX, OLD_TEXTS_END,
};
use super::*;
use std::fs::File;
use std::path::Path;

use crate::events::SessionId;
use crate::ledger::LedgerError;
use crate::ledger::eventindex::EVENT_INDEX_FILE;
use crate::ledger::logfile::{LOG_FILE, Slot};
use crate::ledger::store::{Batch, LedgerMeta, StagedEvent, Store, TextRecord};

fn batch(seq: u64, session: &SessionId) -> Batch {
    Batch {
        events: vec![StagedEvent {
            seq,
            bytes: format!("{{\"seq\":{seq}}}").into_bytes(),
            session: Some(session.clone()),
        }],
        texts: vec![(
            [u8::try_from(seq).unwrap_or(0); 32],
            TextRecord {
                salt: [1; 32],
                text: format!("text {seq}"),
            },
        )],
    }
}

#[test]
fn sled_store_keeps_batches_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::random();
    {
        let mut store = SledStore::reopen(dir.path());
        store
            .init_meta(&LedgerMeta {
                ledger_id: "l".into(),
                created_at: "t".into(),
                format: "thinkledger/1".into(),
            })
            .unwrap();
        store.append_batch(&batch(1, &session)).unwrap();
        store.append_batch(&batch(2, &session)).unwrap();
        store.sync().unwrap();
    }
    let store = SledStore::reopen(dir.path());
    assert_eq!(store.meta().unwrap().unwrap().ledger_id, "l");
    assert_eq!(store.last_seq().unwrap(), Some(2));
    assert_eq!(store.session_seqs(&session).unwrap(), vec![1, 2]);
    assert_eq!(store.text(&[2; 32]).unwrap().unwrap().text, "text 2");
    let texts: Vec<_> = store
        .texts_in_file_order()
        .unwrap()
        .map(|(c, r)| (c, r.unwrap().map(|r| r.text)))
        .collect();
    assert_eq!(
        texts,
        vec![
            ([1; 32], Some("text 1".into())),
            ([2; 32], Some("text 2".into()))
        ]
    );
    let all: Vec<u64> = store.events_from(1).map(|r| r.unwrap().0).collect();
    assert_eq!(all, vec![1, 2]);
}

/// A read-only view holds the log as it stood: later events are not in it, nor the
/// texts that came with them (a backup taken from it holds no text without its event).
#[test]
fn a_read_only_view_holds_neither_the_events_nor_the_texts_written_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::random();
    let mut store = SledStore::reopen(dir.path());
    store.append_batch(&batch(1, &session)).unwrap();
    store.sync().unwrap();
    let view = store.read_only().unwrap().unwrap();
    store.append_batch(&batch(2, &session)).unwrap();
    store.sync().unwrap();
    assert_eq!(view.last_seq().unwrap(), Some(1));
    let all: Vec<u64> = view.events_from(1).map(|r| r.unwrap().0).collect();
    assert_eq!(all, vec![1]);
    assert_eq!(view.session_seqs(&session).unwrap(), vec![1]);
    assert_eq!(view.text(&[1; 32]).unwrap().unwrap().text, "text 1");
    assert_eq!(view.text(&[2; 32]).unwrap(), None);
    let texts: Vec<[u8; 32]> = view
        .texts_in_file_order()
        .unwrap()
        .map(|(c, _)| c)
        .collect();
    assert_eq!(texts, vec![[1; 32]]);
    assert_eq!(store.texts_in_file_order().unwrap().count(), 2);
}

/// A server's store lets go of its reads by opening its database again: what was staged
/// is durable, and everything reads and appends as before, then and after a reopen.
#[test]
fn a_serving_store_that_lets_go_of_its_reads_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::random();
    let check = |store: &SledStore, last: u64| {
        assert_eq!(store.last_seq().unwrap(), Some(last));
        let seqs: Vec<u64> = (1..=last).collect();
        assert_eq!(store.session_seqs(&session).unwrap(), seqs);
        let all: Vec<u64> = store.events_from(1).map(|r| r.unwrap().0).collect();
        assert_eq!(all, seqs);
        let last_byte = u8::try_from(last).unwrap();
        assert_eq!(
            store.text(&[last_byte; 32]).unwrap().unwrap().text,
            format!("text {last}")
        );
        assert_eq!(store.texts_in_file_order().unwrap().count(), seqs.len());
    };
    {
        let mut store = SledStore::open_for_serving(dir.path()).unwrap();
        store.append_batch(&batch(1, &session)).unwrap();
        store.sync().unwrap();
        // Staged, not yet synced: made durable before the database is closed.
        store.append_batch(&batch(2, &session)).unwrap();
        store.release_reads().unwrap();
        check(&store, 2);
        store.append_batch(&batch(3, &session)).unwrap();
        store.sync().unwrap();
        store.release_reads().unwrap();
        check(&store, 3);
    }
    check(&SledStore::reopen(dir.path()), 3);
}

/// A frame made durable whose index entries never were (a crash between the two writes)
/// is indexed at the next open; a frame that never became whole (a torn write) is cut off.
#[test]
fn frames_past_the_index_are_indexed_at_open_and_a_torn_one_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::random();
    let log = dir.path().join(LOG_FILE);
    let whole = {
        let mut store = SledStore::reopen(dir.path());
        store.append_batch(&batch(1, &session)).unwrap();
        store.sync().unwrap();
        // Durable in the log, never indexed.
        store.append_batch(&batch(2, &session)).unwrap();
        store.log.sync().unwrap();
        store.unindexed.clear();
        assert_eq!(store.last_seq().unwrap(), Some(1));
        // A third frame, written only in part.
        store.append_batch(&batch(3, &session)).unwrap();
        store.log.sync().unwrap();
        let whole = store.unindexed[0].end;
        store.unindexed.clear();
        whole
    };
    let torn = whole - 5;
    File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(torn)
        .unwrap();
    let mut store = SledStore::reopen(dir.path());
    assert_eq!(store.last_seq().unwrap(), Some(2));
    assert_eq!(store.session_seqs(&session).unwrap(), vec![1, 2]);
    assert_eq!(store.text(&[2; 32]).unwrap().unwrap().text, "text 2");
    assert_eq!(store.text(&[3; 32]).unwrap(), None);
    let cut = std::fs::metadata(&log).unwrap().len();
    assert!(cut < torn, "the torn frame is cut off ({torn} -> {cut})");
    // The next batch goes where the torn one was.
    store.append_batch(&batch(3, &session)).unwrap();
    store.sync().unwrap();
    drop(store);
    let store = SledStore::reopen(dir.path());
    let all: Vec<u64> = store.events_from(1).map(|r| r.unwrap().0).collect();
    assert_eq!(all, vec![1, 2, 3]);
    assert_eq!(store.text(&[3; 32]).unwrap().unwrap().text, "text 3");
}

/// A crash before the mark moves: the event records past it may hold anything (they were
/// never made durable); the next open drops them and indexes those frames again.
#[test]
fn event_records_past_the_mark_are_written_again_from_the_log_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::random();
    {
        let mut store = SledStore::reopen(dir.path());
        store.append_batch(&batch(1, &session)).unwrap();
        store.sync().unwrap();
    }
    {
        let mut store = SledStore::reopen(dir.path());
        for seq in 2..=3 {
            store.append_batch(&batch(seq, &session)).unwrap();
            store.sync().unwrap();
        }
        assert_eq!(store.last_seq().unwrap(), Some(3));
        // A crash: sled goes without the mark moving past event 1.
        store.sled = None;
    }
    let idx = dir.path().join(EVENT_INDEX_FILE);
    let file = File::options().write(true).open(&idx).unwrap();
    use std::os::unix::fs::FileExt;
    file.write_all_at(&[0xAB; 12 * 4], 12 * 2).unwrap();
    drop(file);
    let store = SledStore::reopen(dir.path());
    let all: Vec<u64> = store.events_from(0).map(|r| r.unwrap().0).collect();
    assert_eq!(all, vec![1, 2, 3]);
    assert_eq!(store.event_bytes(3).unwrap(), Some(b"{\"seq\":3}".to_vec()));
    assert_eq!(store.session_seqs(&session).unwrap(), vec![1, 2, 3]);
    assert_eq!(std::fs::metadata(&idx).unwrap().len(), 12 * 4);
}

/// An event index cut shorter than the mark: the store refuses to open, and a refused open
/// leaves the mark where it was (it does not fall back to indexing from the start of the
/// log, whose erased frames no longer match their checksums).
#[test]
fn a_cut_event_index_is_refused_every_time_and_the_mark_stays() {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::random();
    {
        let mut store = SledStore::reopen(dir.path());
        for seq in 1..=3 {
            store.append_batch(&batch(seq, &session)).unwrap();
            store.sync().unwrap();
        }
    }
    let idx = dir.path().join(EVENT_INDEX_FILE);
    let full = std::fs::read(&idx).unwrap();
    File::options()
        .write(true)
        .open(&idx)
        .unwrap()
        .set_len(12)
        .unwrap();
    for _ in 0..2 {
        match when_unlocked(|| SledStore::open(dir.path())) {
            Err(LedgerError::Corrupt(why)) => assert!(why.contains("restore"), "{why}"),
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a cut event index was accepted"),
        }
    }
    std::fs::write(&idx, full).unwrap();
    let store = SledStore::reopen(dir.path());
    let all: Vec<u64> = store.events_from(0).map(|r| r.unwrap().0).collect();
    assert_eq!(all, vec![1, 2, 3]);
}

/// A ledger of 26 Nov 2026 (`log/1`: the event index in sled's `log_events` tree) has it
/// moved into `events.idx` at its first open, then the tree dropped.
#[test]
fn a_log1_ledger_has_its_event_index_moved_into_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::random();
    let mut slots = Vec::new();
    {
        let mut store = SledStore::reopen(dir.path());
        for seq in 1..=3 {
            store.append_batch(&batch(seq, &session)).unwrap();
            store.sync().unwrap();
        }
        for seq in 1..=3 {
            slots.push((seq, store.index.reads().slot(seq).unwrap().unwrap()));
        }
    }
    {
        // As the build of 26 Nov 2026 left it: no event index file, the entries and the
        // mark (the log's end only) in sled.
        let db = sled::open(dir.path()).unwrap();
        let meta = db.open_tree("meta").unwrap();
        let mark = meta.remove(MARK_KEY).unwrap().unwrap();
        meta.insert(LOG1_END, &mark[..8]).unwrap();
        meta.insert(LAYOUT_KEY, LOG1).unwrap();
        let events = db.open_tree(LOG1_EVENTS).unwrap();
        for (seq, slot) in &slots {
            events
                .insert(seq.to_be_bytes(), &slot.encode()[..])
                .unwrap();
        }
        db.flush().unwrap();
        std::fs::remove_file(dir.path().join(EVENT_INDEX_FILE)).unwrap();
    }
    let store = SledStore::reopen(dir.path());
    let all: Vec<u64> = store.events_from(0).map(|r| r.unwrap().0).collect();
    assert_eq!(all, vec![1, 2, 3]);
    assert_eq!(store.last_seq().unwrap(), Some(3));
    assert_eq!(store.text(&[2; 32]).unwrap().unwrap().text, "text 2");
    let sled = store.sled().unwrap();
    assert!(
        !sled
            .db
            .tree_names()
            .iter()
            .any(|n| n == LOG1_EVENTS.as_bytes())
    );
    assert_eq!(sled.meta.get(LAYOUT_KEY).unwrap().unwrap(), LAYOUT);
    assert_eq!(sled.meta.get(LOG1_END).unwrap(), None);
}

/// A ledger of the layout before the log file (events in sled's `events` tree, texts in
/// `texts.dat`) is copied into the log file at its first open: every event, session entry
/// and text the old index named, no erased or torn text, nothing of the old layout left.
#[test]
fn a_ledger_of_the_layout_before_the_log_file_is_copied_into_it() {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::random();
    let len_prefix = |text: &str| {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&u32::try_from(32 + text.len()).unwrap().to_le_bytes());
        bytes
    };
    {
        let db = sled::open(dir.path()).unwrap();
        let events = db.open_tree(OLD_EVENTS).unwrap();
        let sessions = db.open_tree("session_events").unwrap();
        let index = db.open_tree(OLD_TEXT_INDEX).unwrap();
        let meta = db.open_tree("meta").unwrap();
        meta.insert(
            "ledger",
            &br#"{"ledgerId":"l","createdAt":"t","format":"thinkledger/1"}"#[..],
        )
        .unwrap();
        for seq in 1..=3u64 {
            events
                .insert(seq.to_be_bytes(), format!("{{\"seq\":{seq}}}").as_bytes())
                .unwrap();
        }
        sessions.insert(session_key(&session, 1), &[][..]).unwrap();
        sessions.insert(session_key(&session, 3), &[][..]).unwrap();
        // Three records: kept, erased, and one past where the old index ended (torn).
        let mut file = b"thinkledger texts v1\n".to_vec();
        for (c, text, erased) in [(1u8, "kept text", false), (2, "gone text", true)] {
            let offset = file.len() as u64;
            file.extend(len_prefix(text));
            file.extend_from_slice(&[c; 32]);
            if erased {
                file.extend(vec![0; 32 + text.len()]);
            } else {
                file.extend_from_slice(&[9; 32]);
                file.extend_from_slice(text.as_bytes());
            }
            let slot = Slot {
                offset,
                len: u32::try_from(32 + text.len()).unwrap(),
            };
            index.insert(&[c; 32][..], &slot.encode()[..]).unwrap();
        }
        meta.insert(OLD_TEXTS_END, &(file.len() as u64).to_be_bytes()[..])
            .unwrap();
        file.extend(len_prefix("torn"));
        std::fs::write(dir.path().join(OLD_TEXT_FILE), file).unwrap();
        db.flush().unwrap();
    }
    let store = SledStore::reopen(dir.path());
    assert_eq!(store.meta().unwrap().unwrap().ledger_id, "l");
    let all: Vec<(u64, Vec<u8>)> = store.events_from(1).map(|r| r.unwrap()).collect();
    assert_eq!(
        all,
        (1..=3u64)
            .map(|s| (s, format!("{{\"seq\":{s}}}").into_bytes()))
            .collect::<Vec<_>>()
    );
    assert_eq!(store.session_seqs(&session).unwrap(), vec![1, 3]);
    let kept = store.text(&[1; 32]).unwrap().unwrap();
    assert_eq!((kept.salt, kept.text.as_str()), ([9; 32], "kept text"));
    assert_eq!(store.text(&[2; 32]).unwrap(), None);
    assert!(!dir.path().join(OLD_TEXT_FILE).exists());
    let names = store.sled().unwrap().db.tree_names();
    assert!(!names.iter().any(|n| n == OLD_EVENTS.as_bytes()));
    assert!(!names.iter().any(|n| n == OLD_TEXT_INDEX.as_bytes()));
    drop(store);
    // Opened again: as it was, nothing copied twice.
    let store = SledStore::reopen(dir.path());
    assert_eq!(store.events_from(1).count(), 3);
    assert_eq!(store.texts_in_file_order().unwrap().count(), 1);
}

#[test]
fn a_second_open_of_the_same_dir_is_refused_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let _first = SledStore::open(dir.path()).unwrap();
    // sled's lock is per process (flock on its log); a second open in this process is
    // refused the same way another process would be.
    match SledStore::open(dir.path()) {
        Err(LedgerError::Locked { .. }) => {}
        Err(other) => panic!("expected Locked, got {other}"),
        Ok(_) => panic!("expected Locked, got a second handle"),
    }
}

#[test]
fn a_large_event_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(300 * 1024);
    {
        let mut store = SledStore::reopen(dir.path());
        let batch = Batch {
            events: vec![StagedEvent {
                seq: 1,
                bytes: big.clone().into_bytes(),
                session: None,
            }],
            texts: Vec::new(),
        };
        store.append_batch(&batch).unwrap();
        store.sync().unwrap();
    }
    let store = SledStore::reopen(dir.path());
    assert_eq!(store.event_bytes(1).unwrap().unwrap(), big.into_bytes());
}

/// Every byte of every file under `dir`.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(all_bytes(&path));
        } else {
            out.extend(std::fs::read(&path).unwrap());
        }
    }
    out
}

#[test]
fn an_erased_text_leaves_no_byte_of_its_plaintext_or_salt_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "the launch code is 7741-ALPHA-quasar";
    let salt = [0xA5; 32];
    let session = SessionId::random();
    {
        let mut store = SledStore::reopen(dir.path());
        let mut b = batch(1, &session);
        b.texts = vec![
            (
                [1; 32],
                TextRecord {
                    salt,
                    text: secret.into(),
                },
            ),
            (
                [2; 32],
                TextRecord {
                    salt: [3; 32],
                    text: "keep me".into(),
                },
            ),
        ];
        store.append_batch(&b).unwrap();
        store.sync().unwrap();
    }
    let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    assert!(
        contains(&all_bytes(dir.path()), secret.as_bytes()),
        "stored before erasure"
    );
    {
        let mut store = SledStore::reopen(dir.path());
        store.erase_texts(&[[1; 32]]).unwrap();
        assert_eq!(store.text(&[1; 32]).unwrap(), None);
        // Erasing again is a no-op.
        store.erase_texts(&[[1; 32]]).unwrap();
    }
    let store = SledStore::reopen(dir.path());
    assert_eq!(store.text(&[1; 32]).unwrap(), None);
    assert_eq!(store.text(&[2; 32]).unwrap().unwrap().text, "keep me");
    let bytes = all_bytes(dir.path());
    assert!(
        !contains(&bytes, secret.as_bytes()),
        "plaintext left on disk"
    );
    assert!(!contains(&bytes, &salt), "salt left on disk");
}
