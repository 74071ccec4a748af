use super::*;
use crate::tokens::tokenizer::packed_piece;
use crate::tokens::tokenizer::Cut;
use crate::tokens::Encoding;

const TEXT: &str = "The build fails: error[E0308] mismatched types in src/store/mod.rs \
                    at line 42, expected `u64`, found `usize`. Naïve café façade — 日本語のテキスト.";

/// Runs `f` on a thread of its own: each thread has its own memo.
fn on_fresh_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| scope.spawn(f).join().unwrap())
}

fn count_all(text: &str) -> [usize; 2] {
    [Encoding::O200kBase, Encoding::Cl100kBase].map(|e| e.tokenizer().count(text))
}

#[test]
fn a_later_process_counts_the_kept_pieces_without_the_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token-counts");
    let first = on_fresh_thread(|| {
        let kept = KeptCounts::load(&path);
        let counts = count_all(TEXT);
        assert!(kept.save().unwrap());
        counts
    });
    on_fresh_thread(|| {
        let kept = KeptCounts::load(&path);
        let before = counted();
        assert_eq!(count_all(TEXT), first);
        assert_eq!(
            counted(),
            before,
            "every piece was found among the kept ones"
        );
        assert!(!kept.save().unwrap(), "nothing new to write");
        count_all("a word never seen: zyxwvutsrq");
        assert!(kept.save().unwrap());
    });
}

#[test]
fn a_later_process_finds_a_long_text_counted_whole_without_splitting_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token-counts");
    let long = TEXT.repeat(4);
    let changed = long.replacen("error", "errar", 1);
    let first = on_fresh_thread(|| {
        let kept = KeptCounts::load(&path);
        let counts = count_all(&long);
        assert!(kept.save().unwrap());
        counts
    });
    on_fresh_thread(|| {
        let kept = KeptCounts::load(&path);
        let remembered =
            [Encoding::O200kBase, Encoding::Cl100kBase].map(|e| e.tokenizer().remembered(&long));
        assert_eq!(remembered, first.map(Some), "both counts kept whole");
        assert_eq!(
            Encoding::O200kBase.tokenizer().remembered(&changed),
            None,
            "a text of the same length that differs is not taken for it"
        );
        assert_eq!(count_all(&long), first);
        assert!(!kept.save().unwrap(), "nothing new to write");
        count_all(&changed);
        assert!(kept.save().unwrap(), "a new long text is written");
    });
}

#[test]
fn a_later_process_finds_where_a_long_text_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token-counts");
    let long = TEXT.repeat(4);
    let cuts = [
        (Cut::Head(40), [120, 0]),
        (Cut::Tail(40), [310, 0]),
        (Cut::Prefix(60), [61, 250]),
    ];
    on_fresh_thread(|| {
        let kept = KeptCounts::load(&path);
        for (cut, found) in cuts {
            Encoding::O200kBase
                .tokenizer()
                .remember_cut(&long, cut, found);
        }
        assert!(kept.save().unwrap(), "new cuts are written");
    });
    on_fresh_thread(|| {
        let kept = KeptCounts::load(&path);
        for (cut, found) in cuts {
            let tokenizer = Encoding::O200kBase.tokenizer();
            assert_eq!(tokenizer.remembered_cut(&long, cut), Some(found), "{cut:?}");
            let other = Encoding::Cl100kBase.tokenizer();
            assert_eq!(other.remembered_cut(&long, cut), None, "kept per encoding");
        }
        assert!(!kept.save().unwrap(), "nothing new to write");
    });
}

#[test]
fn kept_counts_equal_the_encodings_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token-counts");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    on_fresh_thread(|| {
        let kept = KeptCounts::load(&path);
        count_all(&readme);
        kept.save().unwrap();
    });
    on_fresh_thread(|| {
        KeptCounts::load(&path);
        for line in readme.lines() {
            let ours = count_all(line);
            assert_eq!(ours[0], bpe_openai::o200k_base().count(line), "{line:?}");
            assert_eq!(ours[1], bpe_openai::cl100k_base().count(line), "{line:?}");
        }
    });
}

#[test]
fn a_damaged_or_foreign_file_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token-counts");
    on_fresh_thread(|| {
        let kept = KeptCounts::load(&path);
        count_all(TEXT);
        kept.save().unwrap();
    });
    let good = std::fs::read(&path).unwrap();
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    let foreign = b"not a file of counts".to_vec();
    for bytes in [
        flipped,
        foreign,
        good[..good.len() - 3].to_vec(),
        Vec::new(),
    ] {
        std::fs::write(&path, &bytes).unwrap();
        on_fresh_thread(|| {
            KeptCounts::load(&path);
            let before = counted();
            assert_eq!(
                count_all("mismatched"),
                [1, 1].map(|_| count_all("mismatched")[0])
            );
            assert!(counted() != before, "nothing was loaded from a bad file");
        });
    }
}

#[test]
fn a_packed_piece_unpacks_to_its_bytes() {
    let source = b"abcdefghijklmnopq";
    for n in 0..=PACKED_PIECE_MAX_BYTES {
        let bytes = &source[..n];
        let (first, last) = packed_piece(bytes);
        assert_eq!(unpack(n, first, last), bytes, "length {n}");
    }
}
