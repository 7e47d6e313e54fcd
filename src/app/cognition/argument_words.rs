//! The word lists of the argument rules (`argument.rs`): markers of inference, the synonym
//! and antonym groups a restatement is recognised by, evaluative and certainty words, number
//! words and evidence nouns. Data, not rules: the rules that read them are in `argument.rs`.

pub(super) const ABBREVIATIONS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "prof", "st", "vs", "eg", "ie", "etc", "no",
];

pub(super) const FORWARD: &[&str] = &[
    "so",
    "therefore",
    "thus",
    "hence",
    "consequently",
    "accordingly",
];

/// "so" after these words is not an inference ("told me so", "or so", "do so").
pub(super) const SO_NOT_AFTER: &[&str] = &[
    "or", "told", "said", "do", "did", "think", "thought", "hope", "not", "me", "it",
];

/// … nor before these ("so that", "so far", "so many").
pub(super) const SO_NOT_BEFORE: &[&str] = &[
    "that", "far", "much", "many", "called", "long", "few", "little",
];

/// "since" before these is about time ("since last spring", "since moving").
pub(super) const TIME_AFTER: &[&str] = &[
    "then",
    "last",
    "early",
    "earlier",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "childhood",
    "birth",
];

/// Synonym groups: a word of a group stands for the group's name.
pub(super) const GROUPS: &[(&str, &str)] = &[
    (
        "RELIABLE",
        "reliable reliably reliability dependable dependability depend depends rely relies trust trusted trusts trustworthy trustworthiness credible consistent consistently",
    ),
    (
        "UNRELIABLE",
        "unreliable untrustworthy inconsistent fail fails failed failing failure failures break breaks broke broken crash crashes crashed",
    ),
    (
        "FAIR",
        "fair fairly fairness just justly justice equitable impartial unbiased",
    ),
    (
        "UNFAIR",
        "unfair unfairly unjust unjustly injustice inequitable biased",
    ),
    (
        "HARM",
        "harmful harm harms damage damages damaging hurt hurts dangerous danger unsafe hazardous unhealthy",
    ),
    ("SAFE", "safe safety harmless healthy"),
    (
        "LESS",
        "lower lowers lowered less fewer reduce reduces reduced reduction decrease decreases decreased decline declines drop drops dropped fall falls fell shrink shrinks",
    ),
    (
        "MORE",
        "raise raises raised rise rises rose increase increases increased grow grows grew growth higher boost boosts",
    ),
    (
        "PRODUCTIVE",
        "productivity productive output efficiency efficient",
    ),
    (
        "GOOD",
        "good great excellent superior right correct ideal optimal perfect beneficial valuable worthwhile better best finest prudent wise sensible advisable reasonable justified warranted appropriate",
    ),
    (
        "EASY",
        "easy easier simple simpler intuitive straightforward effortless user-friendly",
    ),
    (
        "BAD",
        "bad poor terrible awful inferior wrong worse worst useless",
    ),
    ("TRUE", "true truth truthful accurate valid honest honesty"),
    (
        "IMPORTANT",
        "important essential crucial vital necessary key",
    ),
    ("LIKE", "like likes love loves enjoy enjoys prefer prefers"),
    ("DISLIKE", "hate hates dislike dislikes"),
];

/// A group and its opposite (a negated word of one is the other).
pub(super) const OPPOSITES: &[(&str, &str)] = &[
    ("RELIABLE", "UNRELIABLE"),
    ("FAIR", "UNFAIR"),
    ("HARM", "SAFE"),
    ("GOOD", "BAD"),
    ("LESS", "MORE"),
    ("LIKE", "DISLIKE"),
];

/// Groups that judge (an evaluative claim).
pub(super) const EVALUATIVE: &[&str] = &[
    "EASY",
    "GOOD",
    "BAD",
    "RELIABLE",
    "UNRELIABLE",
    "FAIR",
    "UNFAIR",
    "HARM",
    "SAFE",
    "TRUE",
    "IMPORTANT",
];

/// Groups of either polarity: a positive judgement restated by another positive one is still
/// a restatement.
pub(super) const POSITIVE: &[&str] = &[
    "EASY",
    "GOOD",
    "RELIABLE",
    "FAIR",
    "SAFE",
    "TRUE",
    "IMPORTANT",
    "PRODUCTIVE",
];

pub(super) const NEGATIVE: &[&str] = &["BAD", "UNRELIABLE", "UNFAIR", "HARM"];

pub(super) const NUMBER_WORDS: &[&str] = &[
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "fifteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "hundred",
    "hundreds",
    "thousand",
    "thousands",
    "million",
    "millions",
    "billion",
    "dozen",
    "dozens",
    "percent",
    "half",
    "third",
    "quarter",
];

pub(super) const EVIDENCE_NOUNS: &[&str] = &[
    "study",
    "studies",
    "data",
    "dataset",
    "survey",
    "surveys",
    "trial",
    "trials",
    "experiment",
    "experiments",
    "benchmark",
    "benchmarks",
    "test",
    "tests",
    "logs",
    "log",
    "report",
    "reports",
    "metrics",
    "measurement",
    "measurements",
    "analysis",
    "meta-analysis",
    "sample",
    "samples",
    "inspection",
    "audit",
    "audits",
    "results",
    "evidence",
    "statistics",
    "records",
    "interviews",
    "replication",
    "replications",
];

/// Words of certainty that a careful argument rarely needs.
pub(super) const CERTAINTY: &[&str] = &[
    "clearly",
    "obviously",
    "certainly",
    "definitely",
    "undoubtedly",
    "guaranteed",
    "proves",
    "proven",
    "impossible",
    "optimal",
    "perfect",
];
