//! Ledgers written by earlier builds, brought over to the current layout (`log/2`) at their
//! first open: a `log/1` ledger's sled-held event index moved into its file, and the layout
//! before the log file (events in sled, texts in `texts.dat`) copied into it. Until the layout
//! key is durable the old data stays untouched, so a crash only means starting over.

use std::fs::File;

use super::{LAYOUT, LAYOUT_KEY, SledStore, closed, seq_of, sled_err, slots_in_file_order};
use crate::events::SessionId;
use crate::ledger::LedgerError;
use crate::ledger::eventindex::EVENT_INDEX_FILE;
use crate::ledger::logfile::{LOG_FILE, LogFile, LogReader, Slot};
use crate::ledger::store::{StagedEvent, TextRecord};

/// The layout of 26 Nov 2026: the log file, with events indexed in this sled tree and the mark
/// (the log file's end only) under this `meta` key.
pub(super) const LOG1: &[u8] = b"log/1";
pub(super) const LOG1_EVENTS: &str = "log_events";
pub(super) const LOG1_END: &str = "log_end";

/// The layout before the log file (up to 26 Nov 2026): events as values of this sled tree...
pub(super) const OLD_EVENTS: &str = "events";

/// ...texts in this file, found through this tree, which ended at this `meta` key.
pub(super) const OLD_TEXT_FILE: &str = "texts.dat";
pub(super) const OLD_TEXT_INDEX: &str = "text_index";
pub(super) const OLD_TEXTS_END: &str = "texts_end";

/// Bytes of events (or texts) per frame when an older ledger's are copied into the log file.
pub(super) const MIGRATION_FRAME_BYTES: usize = 1 << 20;

impl SledStore {
    /// Brings a ledger of an earlier layout over to this one, or finishes doing so.
    pub(super) fn settle_layout(&mut self) -> Result<(), LedgerError> {
        let sled = self.sled()?;
        match sled.meta.get(LAYOUT_KEY).map_err(sled_err)? {
            Some(layout) if layout == LAYOUT => self.drop_old_layout(),
            Some(layout) if layout == LOG1 => self.index_events_in_a_file(),
            Some(other) => Err(LedgerError::Corrupt(format!(
                "the store's layout is {:?}, which this build does not know: a later thinkledger \
                 wrote it",
                String::from_utf8_lossy(&other)
            ))),
            None => {
                let old = sled
                    .db
                    .tree_names()
                    .iter()
                    .any(|name| name == OLD_EVENTS.as_bytes())
                    || self.dir.join(OLD_TEXT_FILE).exists();
                if old {
                    self.migrate()
                } else {
                    self.index.keep(0)?;
                    self.make_index_durable(true)
                }
            }
        }
    }

    /// Moves the event index of a `log/1` ledger out of sled into its file. Until the layout
    /// key is durable, the old tree and mark stay untouched: a crash here only means starting
    /// over at the next open.
    fn index_events_in_a_file(&mut self) -> Result<(), LedgerError> {
        let started = std::time::Instant::now();
        let sled = self.sled.as_ref().ok_or_else(closed)?;
        self.indexed_end =
            match sled.meta.get(LOG1_END).map_err(sled_err)? {
                None => LogFile::start(),
                Some(raw) => u64::from_be_bytes(raw.as_ref().try_into().map_err(|_| {
                    LedgerError::Corrupt(format!("{LOG1_END} of {} bytes", raw.len()))
                })?),
            };
        self.index.keep(0)?;
        let old = sled.db.open_tree(LOG1_EVENTS).map_err(sled_err)?;
        let mut slots = Vec::new();
        for item in old.iter() {
            let (key, value) = item.map_err(sled_err)?;
            let slot =
                Slot::decode(&value).ok_or_else(|| LedgerError::Corrupt("index entry".into()))?;
            slots.push((seq_of(&key)?, slot));
            if slots.len() == 1 << 16 {
                self.index.put(&slots)?;
                slots.clear();
            }
        }
        self.index.put(&slots)?;
        self.make_index_durable(true)?;
        tracing::info!(
            events = self.index.count(),
            took_ms = started.elapsed().as_millis() as u64,
            "the event index was moved out of sled into {EVENT_INDEX_FILE}"
        );
        self.drop_old_layout()
    }

    /// Copies the events and texts of the layout before the log file into it. Until the layout
    /// key is durable the old trees and file stay untouched, so a crash here only means
    /// starting over at the next open.
    fn migrate(&mut self) -> Result<(), LedgerError> {
        let started = std::time::Instant::now();
        self.log.reset()?;
        self.index.keep(0)?;
        let sled = self.sled.as_ref().ok_or_else(closed)?;
        sled.texts.clear().map_err(sled_err)?;
        let tree = |name: &str| sled.db.open_tree(name).map_err(sled_err);
        let (old_events, old_text_index) = (tree(OLD_EVENTS)?, tree(OLD_TEXT_INDEX)?);
        // Which session each event is indexed under: the frames carry it.
        let mut names: Vec<SessionId> = Vec::new();
        let mut session_of: std::collections::HashMap<u64, usize> =
            std::collections::HashMap::new();
        for item in sled.sessions.iter() {
            let (key, _) = item.map_err(sled_err)?;
            let split = key.len().saturating_sub(8);
            let session = std::str::from_utf8(&key[..split])
                .ok()
                .and_then(SessionId::parse)
                .ok_or_else(|| LedgerError::Corrupt("session index key".into()))?;
            if names.last() != Some(&session) {
                names.push(session);
            }
            session_of.insert(seq_of(&key[split..])?, names.len() - 1);
        }
        let (mut events, mut texts, mut bytes) = (Vec::new(), Vec::new(), 0usize);
        let mut copied = (0u64, 0u64);
        let index = &mut self.index;
        let indexed_end = &mut self.indexed_end;
        let mut frame = |log: &mut LogFile,
                         events: &mut Vec<StagedEvent>,
                         texts: &mut Vec<([u8; 32], TextRecord)>|
         -> Result<(), LedgerError> {
            copied.0 += events.len() as u64;
            copied.1 += texts.len() as u64;
            let framed = log.append(events, texts)?;
            events.clear();
            texts.clear();
            *indexed_end = framed.end;
            sled.index(index, &[framed])
        };
        for item in old_events.iter() {
            let (key, value) = item.map_err(sled_err)?;
            let seq = seq_of(&key)?;
            bytes += value.len();
            events.push(StagedEvent {
                seq,
                bytes: value.to_vec(),
                session: session_of.get(&seq).map(|i| names[*i].clone()),
            });
            if bytes >= MIGRATION_FRAME_BYTES {
                frame(&mut self.log, &mut events, &mut texts)?;
                bytes = 0;
            }
        }
        let old_texts = self.dir.join(OLD_TEXT_FILE);
        if old_texts.exists() {
            let reader = LogReader::open(&old_texts)?;
            for (commitment, record) in reader.texts_in_order(slots_in_file_order(&old_text_index)?)
            {
                // Erased, or never made durable (past where the index ended): not copied.
                let Some(record) = record? else { continue };
                bytes += record.text.len();
                texts.push((commitment, record));
                if bytes >= MIGRATION_FRAME_BYTES {
                    frame(&mut self.log, &mut events, &mut texts)?;
                    bytes = 0;
                }
            }
        }
        if !events.is_empty() || !texts.is_empty() {
            frame(&mut self.log, &mut events, &mut texts)?;
        }
        self.log.sync()?;
        self.make_index_durable(true)?;
        tracing::info!(
            events = copied.0,
            texts = copied.1,
            took_ms = started.elapsed().as_millis() as u64,
            "the ledger's events and texts were copied into its log file ({LOG_FILE})"
        );
        self.drop_old_layout()
    }

    /// Removes what earlier layouts left, once the log file and the event index hold it all.
    fn drop_old_layout(&mut self) -> Result<(), LedgerError> {
        let sled = self.sled()?;
        let names = sled.db.tree_names();
        let mut any = false;
        for old in [OLD_EVENTS, OLD_TEXT_INDEX, LOG1_EVENTS] {
            if names.iter().any(|name| name == old.as_bytes()) {
                sled.db.drop_tree(old).map_err(sled_err)?;
                any = true;
            }
        }
        for key in [OLD_TEXTS_END, LOG1_END] {
            any |= sled.meta.remove(key).map_err(sled_err)?.is_some();
        }
        if any {
            self.make_index_durable(false)?;
        }
        let old_texts = self.dir.join(OLD_TEXT_FILE);
        if old_texts.exists() {
            std::fs::remove_file(&old_texts)?;
            File::open(&self.dir)?.sync_all()?;
        }
        Ok(())
    }
}
