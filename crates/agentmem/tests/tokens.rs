//! Exact counts: agentmem's BPE counts against tiktoken's reference
//! implementation (tiktoken-rs, OpenAI's rank files) on awkward text.

use std::sync::LazyLock;

use agentmem::Encoding;
use proptest::prelude::Strategy;

const AWKWARD: &[&str] = &[
    "",
    " ",
    "Hello, world!",
    "  leading and trailing spaces   ",
    "tabs\tand\r\nCRLF\r\nline endings\n\n\n",
    "I'm sure they've said we'll do it, isn't it? DON'T SHOUT",
    "naïve café — résumé, Übergrößenträger, ça va?",
    "日本語のテキストと中文混合, 한국어도 있어요",
    "emoji 👩‍💻🚀🔥 and flags 🇫🇷🇯🇵 and skin tones 👍🏽",
    "numbers 1234567890 3.14159 1e-9 0xDEADBEEF 1,000,000",
    "<|endoftext|> <|im_start|>user\nhello<|im_end|> <|fim_prefix|>",
    "fn main() {\n    let x: Vec<u8> = vec![0; 1024];\n    println!(\"{x:?}\");\n}\n",
    "{\"role\":\"tool\",\"tool_call_id\":\"call_abc123\",\"content\":\"ok\"}",
    "https://example.com/a/b?c=d&e=f#frag   /home/dev/proj/src/lib.rs:42:7",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "                                                                                                    x",
    "\u{0}\u{1}\u{7f} control \u{200b}zero width\u{feff}",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math 𝟙𝟚𝟛 and combining e\u{301}\u{302}",
];

static O200K: LazyLock<tiktoken_rs::CoreBPE> = LazyLock::new(|| tiktoken_rs::o200k_base().unwrap());
static CL100K: LazyLock<tiktoken_rs::CoreBPE> =
    LazyLock::new(|| tiktoken_rs::cl100k_base().unwrap());

fn assert_exact(text: &str) {
    let (o200k, cl100k) = (&*O200K, &*CL100K);
    assert_eq!(
        Encoding::O200kBase.tokenizer().count(text),
        o200k.encode_ordinary(text).len(),
        "o200k_base on {text:?}"
    );
    assert_eq!(
        Encoding::Cl100kBase.tokenizer().count(text),
        cl100k.encode_ordinary(text).len(),
        "cl100k_base on {text:?}"
    );
}

#[test]
fn counts_match_tiktoken_on_awkward_text() {
    for text in AWKWARD {
        assert_exact(text);
    }
    assert_exact(&AWKWARD.join("\n"));
}

/// Short pieces' counts are remembered, keyed by their bytes: pieces of
/// every length up to past the memo's limit that differ in one byte, or in
/// length only, are never taken for one another, on a first count or a
/// remembered one.
#[test]
fn remembered_piece_counts_never_stand_for_another_piece() {
    let mut pieces = Vec::new();
    for len in 1..=30 {
        for at in 0..len {
            for byte in [b'x', b'Z', b'e'] {
                let mut piece = vec![b'q'; len];
                piece[at] = byte;
                pieces.push(String::from_utf8(piece).unwrap());
            }
        }
    }
    for _ in 0..2 {
        for piece in &pieces {
            assert_exact(piece);
            assert_exact(&format!(" {piece}"));
        }
    }
}

#[test]
fn counts_match_tiktoken_on_every_fixture() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agentmem-import/tests/fixtures"
    );
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert_exact(&text);
        for line in text.lines() {
            assert_exact(line);
        }
    }
}

#[test]
fn a_word_is_at_least_a_token_on_awkward_text() {
    for encoding in Encoding::ALL {
        let tokenizer = encoding.tokenizer();
        for text in AWKWARD {
            assert!(
                tokenizer.count_at_least(text) <= tokenizer.count(text),
                "{text:?}"
            );
        }
    }
}

#[test]
fn long_texts_are_counted_the_same_every_time_and_never_for_one_another() {
    // Same length, different tokens: a remembered count must be the text's own.
    let texts = [
        "a".repeat(600),
        "ab ".repeat(200),
        "日本".repeat(100),
        (0..120).map(|i| format!("{i:04}")).collect::<String>(),
        AWKWARD.join("\n"),
    ];
    for round in 0..3 {
        for text in texts.iter().cycle().skip(round).take(texts.len()) {
            assert_exact(text);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// ASCII text takes the hand-written pre-tokenizer: its counts must be
    /// tiktoken's too, on text made of the characters its rules turn on.
    #[test]
    fn a_word_is_at_least_a_token(
        text in proptest::collection::vec(
            proptest::sample::select(b"aZ09 \t\n'.,!-_".to_vec()),
            0..120,
        ).prop_map(|bytes| String::from_utf8(bytes).unwrap())
    ) {
        for encoding in Encoding::ALL {
            let tokenizer = encoding.tokenizer();
            proptest::prop_assert!(tokenizer.count_at_least(&text) <= tokenizer.count(&text));
        }
    }

    #[test]
    fn counts_match_tiktoken_on_any_ascii_text(
        text in proptest::collection::vec(
            proptest::sample::select(
                b"aAzZsStTrReEvVmMlLdD09 \t\n\r\x0B\x0C'/.,!-_~\x00\x1b".to_vec()
            ),
            0..200,
        ).prop_map(|bytes| String::from_utf8(bytes).unwrap())
    ) {
        assert_exact(&text);
    }
}

#[test]
fn the_approximation_is_a_quarter_of_the_characters() {
    let tokenizer = Encoding::Approximate.tokenizer();
    assert_eq!(tokenizer.count(""), 0);
    assert_eq!(tokenizer.count("abcd"), 1);
    assert_eq!(tokenizer.count("abcde"), 2);
    assert_eq!(tokenizer.count("日本語のテ"), 2, "characters, not bytes");
}
