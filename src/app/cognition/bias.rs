//! `detect_bias`'s rules: the seed's eight bias types, each a list of patterns (regular
//! expressions over the lower-cased text, docs/cognition.md lists them) that mark a phrase
//! typical of the bias, a cue of it followed by a conclusion ("already paid … so"), or (since
//! bias/4) the bias's structure ("agreed with her … waved away the rest"); framing also by a
//! figure and its complement in one comparison, computed ([`complementary_figures`]). A type
//! is reported when one of its patterns matches; the finding names the phrase it matched (its
//! evidence span, with offsets), a severity and a correction.
//!
//! Severity: 0.5 for one matched phrase, +0.15 for each further one, +0.15 when the text also
//! makes an unsupported absolute claim (`always`, `never`, `everyone`, `certainly`, …), at most
//! 0.95. Confidence: 0.6 + 0.1 per further phrase, at most 0.9. These are the rule set's
//! orderings, not calibrated probabilities.
//!
//! Since bias/5 a type is also found by resemblance: when the text's nearest labelled
//! examples ([`super::examples`]) mostly show a type the patterns did not find.
//!
//! Pure. Must not know MCP or the ledger.

use std::sync::LazyLock;

use regex::Regex;
use schemars::JsonSchema;
use serde::Serialize;

use super::examples;

/// The rule set and version every answer names.
pub const RULES: &str = "thinkledger.cognition.bias/5";

/// One bias type: its name, what to do about it, and the phrases that mark it.
struct BiasRule {
    kind: &'static str,
    correction: &'static str,
    patterns: &'static [&'static str],
}

const RULE_TABLE: &[BiasRule] = &[
    BiasRule {
        kind: "confirmation",
        correction: "Actively seek disconfirming evidence and state what would change your mind",
        patterns: &[
            r"\b(support|confirm|prove|validate|back|vindicate)(s|es|ed|d|ing)? (up )?(my|our) (hypothesis|belief|view|theory|assumption|idea|point|suspicion|position|opinion|hunch|case)",
            r"\b(search(ed|ing)?|look(ed|ing)?|went looking|googl(e|ed|ing)|ask(ed|ing)?|read|cherry-pick(ed|ing)?) (only )?(for )?(the )?(articles|studies|sources|evidence|data|opinions|people|reviews|papers|experts|blogs|posts|examples) (that|which|who) (agree|support|confirm|back|side)",
            r"\b(agree|agrees|agreed|side|sided) with (me|us|my view|our view)\b.{0,80}\b(confirm|prove|support|show)",
            r"\b(as|just as) (i|we) (expected|predicted|suspected|thought)",
            r"\bknew it all along\b",
            r"\b(ignor(e|ed|ing)|dismiss(ed|ing)?|disregard(ed|ing)?) (the |any |all )?(contradict\w*|conflicting|opposing|negative|contrary) (data|evidence|results?|reviews?|findings|feedback)",
            r"\bonly (look(ed)?|search(ed)?|consider(ed)?|read|cite[sd]?) (at )?(the )?(data|evidence|studies|sources|articles|reviews|results) (that|which) (support|agree|confirm)",
            r"\ball the (data|evidence|results) (i|we)('ve| have)? (seen|found|read) (supports?|confirms?|shows?)",
            r"\b(proves?|proved) (that )?(i|we) (was|were|am|are) right\b",
            r"\b(only|just|exclusively) (read|reads|follow|follows|watch|watches|listens? to|trust|trusts|look at|check|ask|asked|cite|consider|talk to|visit)\b.{0,50}\b(that|which|who) (agree|agrees|share|shares|support|supports|confirm|confirms|back|backs|side|sides|echo|echoes|think like)",
            r"\b(share|shares|shared|match|matches|echo|echoes|fit|fits) (my|our|his|her|their) (opinion|opinions|view|views|belief|beliefs|politics|position|thinking|worldview)",
            r"\bconfirm(s|ed)? (what|everything|all) (i|we|he|she|they) (already |always )?(believed|thought|knew|suspected|said|expected)",
            r"\b(ignore|ignored|ignoring|dismiss|dismissed|skip|skipped|brush off|brushed off) (anything|everything|whatever|the ones?|those|any \w+|all \w+) (that|which|who) (disagree|disagrees|contradict|contradicts|challenge|challenges|question|questions)",
            // bias/4, structure: agreeing evidence taken, the rest dismissed.
            r"\b(agree[sd]?|sided?|support(s|ed)?|back(s|ed)|confirm(s|ed)?|match(es|ed)?|echo(es|ed)?) (with )?(me|him|her|them|us|my|his|their|our)\b.{0,100}\b(waved? away|waves away|dismiss\w*|ignor\w*|reject\w*|brush(es|ed)? (off|aside)|wr(i|o)tes? off|(calls?|called) (them|it|\w+) (fake|biased|wrong|rigged|lies|nonsense))",
            r"\b(asked|polled|consulted|surveyed|interviewed) (\w+ ){0,3}(who|that) (already )?(hate|hates|dislike|dislikes|oppose|opposes|love|loves|like|likes|agree|agrees|share|shares|support|supports)\b.{0,80}\b(confirm\w*|agree\w*|said so|backed)",
            r"\bthe (one|only|single|few) (study|studies|survey|surveys|poll|polls|review|reviews|source|sources|expert|experts|article|articles|report|reports|paper|papers|doctor|doctors) (that|which|who) (agree|agreed|agrees|support|supported|supports|confirm|confirmed|confirms|back|backed|backs|side|sided|sides)",
            r"\b(only|just|exclusively) (trust|trusts|trusted|believe|believes|believed|accept|accepts|accepted|count|counts|counted|quote|quotes|quoted|cite|cites|cited|listen to|listens to|listened to)\b.{0,60}\b(that|which|who) (agree|agrees|agreed|support|supports|supported|confirm|confirms|confirmed|back|backs|backed|side|sides|sided|say|says|said)",
            r"\b(dismiss(es|ed)?|wav(es|ed) away|brush(es|ed) off|wr(i|o)tes? off|ignor(es|ed)|reject(s|ed)?) (the |all |any |every )?(contrary|opposing|dissenting|critical|unfavou?rable|negative) ",
        ],
    },
    BiasRule {
        kind: "anchoring",
        correction: "Set the first figure aside and build the estimate again from independent data",
        patterns: &[
            r"\b(first|initial|original|opening|starting) (estimate|number|figure|price|offer|quote|guess|impression|value|bid)\b.{0,80}\b(so|still|stay|stick|close to|near|feels?|seems?|fair|reasonable|deal|bargain|right)\b",
            r"\b(stick|sticking|stuck|anchor(ed)?) (to|with|on) (the|our|my|that) (first|initial|original) ",
            r"\bstart(ed|ing)? (from|at|with) (the |a )?(asking|list|initial|first) (price|figure|number)",
            r"\b(close|near) to (the|our|their) (original|initial|first) (estimate|number|figure|offer|quote)",
            r"\b(first|initially|originally|at first|to begin with|opened|started|listed|asking|asked for|wanted)\b.{0,50}\d.{0,80}\b(deal|bargain|steal|discount|fair|reasonable|cheap|good price|a saving|sounds? (low|high|fair|right)|seems? (low|high|fair|right|reasonable)|feels? (low|high|fair|right|reasonable|cheap))\b",
            // bias/4, structure: a first figure, then a judgement of the figure adjusted from it.
            r"\b(marked down|reduced|cut|discounted|slashed|dropped|lowered|knocked down|came down|went down|down) from \$?\d[\d,.]*k? to \$?\d.{0,60}\b(so|deal|bargain|steal|worth|must|obviously|cheap|saving|grab)",
            r"\b(first|initial|original|opening|asking|list|sticker|starting|originally|initially|at first)\b.{0,50}\d.{0,80}\d.{0,60}\b(deal|bargain|steal|worth|fair|reasonable|cheap|signed|accepted|agreed|took it|jumped at|snapped)",
        ],
    },
    BiasRule {
        kind: "availability",
        correction: "Look up base rates instead of relying on examples that come easily to mind",
        patterns: &[
            r"\b(i|we) (just |recently )?(heard|read|saw) (about|of) (a|an|one|some|that)\b",
            r"\b(i|we) (just |recently )?(saw|read|watched|heard) (a|an|one|that) (\w+ ){0,2}(story|report|article|video|documentary|headline|post|clip|segment)s? (about|on|of)\b",
            r"\b(in|on) the news\b",
            r"\b(comes?|came|springs?) (easily )?to mind\b",
            r"\b(i|we) (can )?remember (a|an|one|that) (case|time|story|incident|example)",
            r"\beveryone('s| is) talking about\b",
            r"\b(a|one) (story|anecdote|headline) (i|we) ",
            r"\b(after|since|ever since) (watching|seeing|reading|hearing)\b.{0,70}\b(convinced|sure|certain|must|so|probably|bound to|about to|going to|too (risky|dangerous)|unsafe|dangerous)\b",
            r"\b(saw|watched|read|heard|seen)\b.{0,30}\b(story|stories|video|report|article|news|documentary|post|clip|headline|movie|film)\b.{0,70}\b(so|convinced|must|probably|bound to|about to|too (risky|dangerous)|unsafe|dangerous)\b",
            // bias/4, structure: one person's case, then a general conclusion.
            r"\b(my|our|a) (uncle|aunt|grandfather|grandmother|grandpa|grandma|granddad|gran|dad|father|mum|mom|mother|friend|neighbou?r|cousin|brother|sister|colleague|coworker|co-worker|boss|roommate|flatmate|partner|classmate)s?('s)?\b.{0,90}\b(so|therefore|which (means|proves|shows)|that (means|proves|shows))\b.{0,60}\b(can'?t|cannot|must|always|never|nothing|safe|harmless|harmful|dangerous|fine|risky|unsafe|bound to|overrated|a myth|rubbish|nonsense|unreliable|bad|terrible|awful|a scam|everywhere|everyone|all)\b",
            r"\b(after|since|because of) (that|the|a|this|one) (\w+ ){0,2}(story|stories|news|report|video|article|documentary|headline|anecdote)\b",
            r"\b(i|we) know (someone|somebody|a guy|a man|a woman|a person|people|a family) who\b.{0,90}\b(so|therefore|proves?|shows?)\b",
        ],
    },
    BiasRule {
        kind: "recency",
        correction: "Weigh the whole history, not only the latest events; compare with a longer window",
        patterns: &[
            r"\b(last|past|this|first) (week|month|quarter|sprint|few days|couple of days|release|year|season|game|match|round|day)('s)?\b.{0,60}\b((so|therefore)\b.{0,40}\b(will|'ll|going to|keep|always|never|from now on|must|clearly|obviously|surely|definitely|bound to|worse|better|for good|anymore|sell|selling|buy|buying|quit|quitting)|always|will|trend|from now on|proves?|means)\b",
            r"\b(recent|latest|most recent) \w+( \w+)?\b.{0,60}\b(so|therefore|always|will|shows?|proves?|means)\b",
            r"\b(yesterday|today|tonight|this morning)('s)?\b.{0,60}\b((so|therefore)\b.{0,40}\b(will|'ll|going to|keep|always|never|from now on|must|clearly|obviously|surely|definitely|bound to|worse|better|for good|anymore|sell|selling|buy|buying|quit|quitting|failing)|always|will|proves?|means)\b",
            r"\bwill (keep|continue|go on) (\w+ing|to \w+)\b.{0,40}\b(from now on|forever|indefinitely)\b",
            r"\bbased (only |solely |just )?on (the )?(last|latest|most recent|recent)\b",
            r"\b(last|past|latest|recent|previous|most recent) (\w+ ){0,2}(\w+s)\b.{0,60}\b(so|therefore|which means)\b.{0,40}\b(will|next|always|never|from now on|keep|bound to|certain|definitely|surely|clearly|obviously|must|doomed|hopeless|a disaster|a failure|finished|over)\b",
        ],
    },
    BiasRule {
        kind: "representativeness",
        correction: "Check the base rate: resemblance to a type is not probability",
        patterns: &[
            r"\b(looks?|seems?|sounds?) like (a |an |the )?(typical|classic|stereotypical|textbook)\b",
            r"\bfits? the (profile|stereotype|pattern|mold|mould) of\b",
            r"\b(must|probably) be (a|an) \w+ because (he|she|they|it) (looks?|seems?|dresses|talks|sounds)",
            r"\b(he|she|they|it) (looks?|seems?|sounds?) like (a|an|the) (typical |kind of )?\w+,? so\b",
            r"\b(typical|classic) \w+ (behaviou?r|type|profile)\b",
            r"\b(all|most) \w+ (people|startups|engineers|managers|companies) (are|do|fail)\b",
            r"\b(has|have|wears|wear|rides|drives|dresses|talks|speaks|reads|lives|looks|acts)\b.{0,60}\bso (he|she|they|it)('s| is| are| must be|'d be)? ?(probably|must be|surely|definitely|obviously|clearly|bound to be|likely) ?(a|an) \w+",
            // bias/4, structure: what a person resembles or comes from, then what they must be.
            r"\bso (he|she|they)('s|'re| is| are)? ?(must|has to|have to|surely|probably|definitely|obviously|clearly|certainly|bound to|is bound to)( be)? (a|an|one of the) \w+",
            r",? so (he|she|they)('s|'re| is| are)? (must|has to|have to|surely|probably|definitely|obviously|clearly|certainly|bound to) (be|play|work|come|vote|live|like|belong)\b",
            r"\b(because|since) (he|she|they) (looks?|seems?|sounds?|dresses|dress|talks|talk|acts|act) like (a|an)\b",
            r"\b(wears?|has|have|dresses|drives|looks|speaks|talks|went to|goes to|comes? from|grew up|dropped out|studied)\b.{0,60}\bso (he|she|they|it|the \w+)('s|'re| is| are)? ?(must|has to|surely|probably|definitely|obviously|clearly|certainly|bound to)( be)? (a|an|the|one of)\b",
        ],
    },
    BiasRule {
        kind: "framing",
        correction: "Restate the figures both ways (gains and losses, successes and failures) before deciding",
        patterns: &[
            r"\b\d+ ?(%|percent) (success|survival|fat[- ]free|satisfaction|chance of success)",
            r"\bonly \d+ ?(%|percent)( of (the )?\w+)? (fail|die|risk|chance of failure|lose|loss|go wrong|suffer|get sick|complain|have (side effects|problems))",
            r"\b(labell?ed|advertised|marketed|sold|promoted|described|billed) as\b.{0,40}\d+ ?(%|percent)",
            r"\b\d+ ?(%|percent) (fat[- ]free|sugar[- ]free|natural|effective|safe|pure|lean|satisfied|recommend|approval|on[- ]time|accurate|positive)\b.{0,60}\b(so|must|therefore|clearly|obviously|definitely)\b",
            r"\b(sounds?|feels?|looks?) (much )?(better|worse|safer|riskier) (when|if|because) (it'?s|you|we) (put|phrased|framed|presented|described|said)",
            r"\b(framed|phrased|presented|described) as (a )?(gain|loss|win|saving|success|failure|opportunity|threat)",
            r"\b(lose|losing|miss out on) \$?\d+.{0,40}\b(instead of|rather than|versus|vs\.?) (saving|gaining|winning)",
            // bias/4, structure: a figure as labelled, or the same figure put both ways.
            r"\b(advertised|labell?ed|marketed|sold|promoted|billed|pitched|touted|boasts?|promis(es|ed)|says|said|claims?|claimed) (as |that )?(\w+ ){0,3}\d+ ?(%|percent| out of \d+| in \d+)",
            r"\d+ ?(%|percent| out of \d+).{0,80}\b(instead of|rather than|over|than|versus|vs\.?|compared (to|with))\b.{0,60}\d+ ?(%|percent| out of \d+)",
        ],
    },
    BiasRule {
        kind: "sunk_cost",
        correction: "Decide on future costs and benefits only; past spending is gone either way",
        patterns: &[
            r"\b(already|have) (spent|invested|put|sunk|poured|wasted) .{0,40}(so|can'?t|cannot|must|have to|should|too)\b",
            r"\btoo much (time|money|effort|work)? ?(in|into|on) (it|this|that|the \w+|this \w+|that \w+|our \w+) to (stop|quit|give up|abandon|walk away|cancel|drop|scrap)",
            r"\b(spent|invested|put|sunk|poured) too much\b.{0,40}\bto (stop|quit|give up|abandon|walk away|cancel|drop|scrap)",
            r"\b(can'?t|cannot|won'?t) (stop|quit|give up|abandon|walk away|cancel)( it| this| that)? now\b",
            r"\b(come|gone) (this|so) far\b",
            r"\b(waste|wasting|throw away|throwing away) (all )?(the |what |everything )?(we|i)('ve| have)? (spent|invested|put in|built)",
            r"\bafter (all|everything) (we|i)('ve| have) (spent|invested|put in)",
            r"\balready (\w+ ){0,3}(paid|spent|invested|sat through|put in|bought|waited|committed|sunk|driven|travell?ed|built|sacrificed|given)\b.{0,70}\b(so|might as well|may as well|can'?t|cannot|have to|must|no point)\b",
            r"\b(might|may) as well (finish|continue|keep|stay|watch|see it through|go on|stick with|carry on)",
            // bias/4, structure: what was paid or spent, then carrying on because of it.
            r"\b(i|we|you|he|she|they)('ve|'d| have| has| had| already)+ (\w+ ){0,2}(paid|spent|invested|put|sunk|poured|bought|given|devoted|committed|sacrificed|waited)\b.{0,60}\b(so|might as well|may as well|can'?t|cannot|have to|must|no point|keep|stay|continue|finish|stick|waste|for nothing|not (leaving|quitting|giving up|stopping))\b",
            r"\b(already|we'?ve|i'?ve|have|has)\b (\w+ ){0,3}\w+(ed|en|t)\b.{0,70}\b(so|that)\b.{0,30}\b((can'?t|cannot|won'?t) (sell|stop|quit|leave|give up|abandon|drop|cancel|walk away|change|switch)|might as well|may as well|have to (keep|finish|continue|stay|see)|keep (going|fixing|paying|trying|using))",
            r"\b(otherwise|or else) (all )?(that|the|my|our|those) (\w+ )?(time|money|effort|work|years|months|hours)\b.{0,20}\b(wasted|for nothing|in vain|down the drain)",
            r"\b(don'?t|do not|can'?t|cannot) (want|let|afford) (all )?(that|the|my|our|it|this) (\w+ )?(time|money|effort|work|investment)? ?(to )?(go|going) to waste",
        ],
    },
    BiasRule {
        kind: "attribution",
        correction: "Consider the situation's part (workload, tools, incentives) before blaming character",
        patterns: &[
            r"\b(he|she|they|the team|the user|users|customers?) (is|are|was|were) (just |simply )?(lazy|stupid|incompetent|careless|sloppy|dumb|idiots?|hopeless|useless|bad at)",
            r"\bbecause (he|she|they|the \w+) (is|are|was|were) (just |simply )?(lazy|stupid|incompetent|careless|sloppy|dumb|not smart|bad at)",
            r"\bthat'?s just (how|who|what) (he|she|they) (is|are)\b",
            r"\b(his|her|their) (fault|incompetence|laziness|carelessness)\b",
            r"\b(i|we) (failed|missed|lost) because of (bad luck|the (weather|market|tools|timing|circumstances))",
            r"\bbecause (he|she|they|the \w+)('s| is| are| was| were) (just |simply |such |so |a |an )*(lazy|stupid|careless|incompetent|sloppy|dumb|selfish|rude|irresponsible|unreliable|useless|arrogant|greedy|dishonest|clumsy|forgetful|disorganized|disorganised|weak|bad)( person| people| guy| man| woman| type| worker| driver)?\b",
            r"\b(is|are|was|were) (a|an) (lazy|stupid|careless|incompetent|sloppy|selfish|rude|irresponsible|unreliable|arrogant|dishonest|clumsy|forgetful) (person|people|guy|man|woman|type|worker|driver)\b.{0,40}\bnot because\b",
            // bias/4, structure: a deed explained by the doer's character.
            r"\b(because|since) (he|she|they|the \w+)('s|'re| is| are| was| were) (just |simply |such |so |really |very |a |an |an? \w+,? )*(lazy|stupid|careless|incompetent|sloppy|dumb|selfish|rude|irresponsible|unreliable|useless|arrogant|greedy|dishonest|clumsy|forgetful|disorgani[sz]ed|weak|aggressive|mean|cruel|reckless|entitled|spoiled|inconsiderate|thoughtless|stubborn|impatient|unprofessional|hostile|nasty|evil|an idiot|a jerk|a moron)\b",
            r"\b(typical of|just like) (him|her|them)\b|\bthat'?s (so|just) (him|her|them)\b|\bwhat (do|did|can) you expect from (a|an|people like|someone like)\b",
        ],
    },
];

/// Unsupported absolutes that raise a finding's severity.
static ABSOLUTES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(always|never|everyone|everybody|nobody|no one|certainly|definitely|undoubtedly|obviously|clearly|guaranteed|without (a )?doubt|100 ?%)\b",
    )
    .unwrap_or_else(|_| unreachable_regex())
});

/// A regex that matches nothing (the patterns are constants and compile; this keeps a broken
/// edit from panicking a server).
fn unreachable_regex() -> Regex {
    Regex::new(r"[^\s\S]").unwrap_or_else(|_| unreachable!("a constant regex compiles"))
}

static COMPILED: LazyLock<Vec<Vec<Regex>>> = LazyLock::new(|| {
    RULE_TABLE
        .iter()
        .map(|rule| {
            rule.patterns
                .iter()
                .filter_map(|p| Regex::new(p).ok())
                .collect()
        })
        .collect()
});

/// The bias types, in the seed's order.
pub const BIAS_TYPES: [&str; 8] = [
    "confirmation",
    "anchoring",
    "availability",
    "recency",
    "representativeness",
    "framing",
    "sunk_cost",
    "attribution",
];

/// Where a finding's evidence is in the text.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Span {
    /// Byte offsets into the text analysed.
    pub start: usize,
    pub end: usize,
}

/// One bias found (the seed's fields, with where its evidence is).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Finding {
    #[serde(rename = "type")]
    pub kind: String,
    /// 0–1 (see the module's rule).
    pub severity: f64,
    /// The phrases that matched, as they stand in the text.
    pub evidence: Vec<String>,
    /// Where each evidence phrase is.
    pub spans: Vec<Span>,
    pub correction: String,
    pub confidence: f64,
    /// `pattern` (a phrase, shape or structure of the type matched) or `examples` (the text
    /// resembles the type's labelled examples; its evidence is the whole text).
    pub basis: String,
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A figure in a text: a share (`%`, `percent`), a count out of a whole ("9 out of 10"), or a
/// plain number.
static FIGURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(\d+(?:\.\d+)?)( ?%| ?percent\b| out of (\d+)\b| in (\d+)\b)?")
        .unwrap_or_else(|_| unreachable_regex())
});

/// A comparison or judgement of options ("than", "instead of", "sounds", "safer", …).
static COMPARED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(than|instead|rather|over|versus|vs|better|worse|safer|riskier|easier|sounds?|prefer\w*|chose|choose|pick\w*)\b")
        .unwrap_or_else(|_| unreachable_regex())
});

/// Framing by structure (since bias/4): the same quantity put both ways in one text, a figure
/// and its complement ("95 out of 100 … 5 still get sick", "80 % lean … 20 % fat"), where the
/// options are compared. The span runs from the first figure to the second.
fn complementary_figures(lower: &str) -> Vec<Span> {
    if !COMPARED.is_match(lower) {
        return Vec::new();
    }
    // (value, whole it is out of, span): a share is out of 100, a plain number of nothing.
    let figures: Vec<(f64, Option<f64>, Span)> = FIGURE
        .captures_iter(lower)
        .filter_map(|c| {
            let m = c.get(0)?;
            let value: f64 = c.get(1)?.as_str().parse().ok()?;
            let whole = match (c.get(2), c.get(3).or_else(|| c.get(4))) {
                (Some(_), Some(w)) => w.as_str().parse().ok(),
                (Some(_), None) => Some(100.0),
                (None, _) => None,
            };
            Some((
                value,
                whole,
                Span {
                    start: m.start(),
                    end: m.end(),
                },
            ))
        })
        .collect();
    let mut out = Vec::new();
    for (i, (a, whole_a, span_a)) in figures.iter().enumerate() {
        for (b, whole_b, span_b) in &figures[i + 1..] {
            let Some(whole) = whole_a.or(*whole_b) else {
                continue;
            };
            if whole_a.is_some_and(|w| w != whole) || whole_b.is_some_and(|w| w != whole) {
                continue;
            }
            if *a > 0.0 && *b > 0.0 && (a + b - whole).abs() < 1e-9 {
                out.push(Span {
                    start: span_a.start,
                    end: span_b.end,
                });
            }
        }
    }
    out
}

/// The biases the rules find in `text`.
pub fn detect(text: &str) -> Vec<Finding> {
    let lower = text.to_lowercase();
    // Offsets are in `lower`; evidence is cut from it when lower-casing changed the length.
    let same_len = lower.len() == text.len();
    let absolute = ABSOLUTES.is_match(&lower);
    let mut out = Vec::new();
    for (rule, patterns) in RULE_TABLE.iter().zip(COMPILED.iter()) {
        let mut spans: Vec<Span> = Vec::new();
        for pattern in patterns {
            for m in pattern.find_iter(&lower) {
                if !spans.iter().any(|s| s.start < m.end() && m.start() < s.end) {
                    spans.push(Span {
                        start: m.start(),
                        end: m.end(),
                    });
                }
            }
        }
        if rule.kind == "framing" {
            for m in complementary_figures(&lower) {
                if !spans.iter().any(|s| s.start < m.end && m.start < s.end) {
                    spans.push(m);
                }
            }
        }
        if spans.is_empty() {
            continue;
        }
        spans.sort_by_key(|s| s.start);
        #[allow(clippy::cast_precision_loss)] // a handful of spans
        let extra = (spans.len() - 1) as f64;
        let severity = (0.5 + 0.15 * extra + if absolute { 0.15 } else { 0.0 }).min(0.95);
        let confidence = (0.6 + 0.1 * extra).min(0.9);
        let source = if same_len { text } else { lower.as_str() };
        let evidence = spans
            .iter()
            .map(|s| source.get(s.start..s.end).unwrap_or_default().to_owned())
            .collect();
        out.push(Finding {
            kind: rule.kind.to_owned(),
            severity: round2(severity),
            evidence,
            spans,
            correction: rule.correction.to_owned(),
            confidence: round2(confidence),
            basis: "pattern".to_owned(),
        });
    }
    if let Some(found) = resembling(text, &out) {
        out.push(found);
    }
    out
}

/// A bias found by resemblance (since bias/5): the nearest labelled examples of the whole text
/// ([`examples::BIAS_EXAMPLES`], label `none` for reasoning without a bias) vote, and a type
/// the patterns did not find is reported when it wins with at least [`MIN_SHARE`] of the
/// votes and its nearest example is at least [`MIN_SIMILARITY`] similar. Its evidence is the
/// whole text; severity 0.5, confidence its share of the votes (at most 0.9).
fn resembling(text: &str, found: &[Finding]) -> Option<Finding> {
    let vote = examples::BIAS_EXAMPLES.vote(text)?;
    let (kind, share) = vote.top()?;
    if kind == "none"
        || share < MIN_SHARE
        || vote.nearest.0 < MIN_SIMILARITY
        || found.iter().any(|f| f.kind == kind)
    {
        return None;
    }
    let rule = RULE_TABLE.iter().find(|r| r.kind == kind)?;
    let trimmed = text.trim_end();
    let start = trimmed.len() - trimmed.trim_start().len();
    Some(Finding {
        kind: kind.to_owned(),
        severity: 0.5,
        evidence: vec![trimmed[start..].to_owned()],
        spans: vec![Span {
            start,
            end: trimmed.len(),
        }],
        correction: rule.correction.to_owned(),
        confidence: round2(share.min(0.9)),
        basis: "examples".to_owned(),
    })
}

/// The least share of the nearest examples' votes a type needs to be reported by resemblance.
/// With [`MIN_SIMILARITY`], chosen on the fifth and sixth held-out sets (each left out of the
/// examples in turn) against false alarms on the development set's sentences without a bias
/// (docs/cognition.md), before the seventh set was run.
const MIN_SHARE: f64 = 0.5;
/// The least cosine similarity of the winning type's nearest example.
const MIN_SIMILARITY: f64 = 0.5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for (rule, compiled) in RULE_TABLE.iter().zip(COMPILED.iter()) {
            assert_eq!(rule.patterns.len(), compiled.len(), "{}", rule.kind);
        }
        assert_eq!(
            RULE_TABLE.iter().map(|r| r.kind).collect::<Vec<_>>(),
            BIAS_TYPES
        );
    }

    #[test]
    fn the_seeds_example_is_confirmation_with_its_span() {
        let text = "All the data I've seen supports my hypothesis that users prefer feature A";
        let found = detect(text);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, "confirmation");
        let span = &found[0].spans[0];
        assert_eq!(&text[span.start..span.end], found[0].evidence[0]);
    }

    #[test]
    fn neutral_text_has_no_bias() {
        assert!(detect("We measured latency over 30 days and compared two designs.").is_empty());
    }
}
