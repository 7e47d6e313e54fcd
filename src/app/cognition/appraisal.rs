//! Appraisal cues for `detect_emotion` (since emotion/4): what a sentence says *happened*, and
//! to whom, rather than which emotion word it uses. Each cue is an appraisal of appraisal
//! theory (Lazarus 1991; Scherer 2001; Ortony, Clore & Collins 1988; awe after Keltner & Haidt
//! 2003) written as a regular expression over the text's words (lower case, apostrophes
//! dropped, one space between words): loss → sadness; others' blame or unfairness → anger; an
//! uncertain threat → fear; contamination or moral repulsion → disgust; an expectation
//! violated → surprise; one's own achievement → pride; exposure before others → shame; harm one
//! caused and would undo → guilt; another's help → gratitude; vastness → awe; a pleasant event
//! → joy. Written for thinkledger (no published lexicon); docs/cognition.md lists them.
//!
//! Pure. Must not know MCP or the ledger.

use std::sync::LazyLock;

use regex::Regex;

/// One cue: the emotion it points to, the appraisal it stands for, its weight (a word of the
/// lexicon weighs 1) and its pattern.
struct Cue {
    emotion: &'static str,
    /// What the cue stands for: documentation, read only by the tests.
    #[cfg_attr(not(test), expect(dead_code))]
    appraisal: &'static str,
    weight: f64,
    pattern: &'static str,
}

/// The cues, by emotion in the seed's order.
const CUES: &[Cue] = &[
    Cue {
        emotion: "joy",
        appraisal: "a pleasant event or activity",
        weight: 1.0,
        pattern: r"\b(smil(e|es|ed|ing)|grin(s|ned|ning)?|laugh(s|ed|ing|ter)?|giggl\w*|celebrat\w*|enjoy(s|ed|ing)?|hooray|yay|woohoo|(great|good|wonderful|lovely|fantastic|best) (news|time|day|mood)|love (it|this|that|every)|(is|was|were|are) (so |absolutely |just |totally )?(amazing|incredible|awesome|fantastic|brilliant|wonderful)|danc(ed|ing)|sang|singing)\b",
    },
    Cue {
        emotion: "sadness",
        appraisal: "a loss: someone or something gone for good",
        weight: 1.0,
        pattern: r"\b(miss(es|ed|ing)? (my|our|her|his|him|them|you|the|home|those)|lost (my|our|her|his|their) (\w+ )?(mother|father|mum|mom|dad|wife|husband|partner|friend|dog|cat|pet|job|home|son|daughter|baby|brother|sister|grandmother|grandfather|grandma|grandpa)|passed away|died|death|funeral|griev\w*|grief|mourn\w*|tears?|wept|weep\w*|sob(s|bed|bing)?|lonely|loneliness|empty|feel(s|ing)? (so )?(blue|down|low)|gone forever|never (see|hear from) (her|him|them|you) again|no longer (here|with us|around)|since (\w+ ){1,3}(left|moved|died|passed|went away)|care home|nursing home|so quiet without|never (\w+ ){1,5}again|tear(ing|ed|s) up|well(ing|ed) up|eyes (filled|welled)|lump in (my|his|her|their) throat)\b",
    },
    Cue {
        emotion: "anger",
        appraisal: "another's wrong: blame, unfairness, a goal blocked",
        weight: 1.0,
        pattern: r"\b(unfair\w*|injustice|how dare|fed up|sick (and tired )?of|had enough of|drives? me (crazy|mad|nuts|up the wall)|mad (at|about|that)|pissed|outrag\w+|infuriat\w+|annoy\w*|irritat\w+|frustrat\w+|resent\w*|betray\w*|insult(ed|ing)|lied to (me|us)|ripped (me|us) off|overcharg\w+|(for|about) the (second|third|fourth|fifth|tenth|umpteenth) time|yet again|rude\w*|(someone|somebody|some \w+|they|he|she) (\w+ )?(keyed|stole|smashed|scratched|dented|vandali[sz]ed|broke into|wrecked|scammed|robbed|insulted|cheated) (my|our|me|us)|(refused|refuses|refusing) to|(cant|cannot|can not|couldnt) (stand|bear)|(makes?|made) my blood boil|blood (boils|boiled|boiling)|steam(ing)? (out of|from) (my|his|her) ears|ignored (every|all|my|our|me|us)|(billed|charged) (me|us) (double|twice|extra)|(cancelled|canceled|overbooked|overcharged) (my|our)|clench(ed|ing) (my|his|her|their) (fists?|jaw|teeth)|grit(ted)? (my|his|her) teeth|saw red)\b",
    },
    Cue {
        emotion: "fear",
        appraisal: "an uncertain threat to come",
        weight: 1.0,
        pattern: r"\b(what if|worr(y|ies|ied|ying)|scar(ed|y)|afraid|terrif\w+|frighten\w*|panic\w*|nervous\w*|anxious\w*|anxiety|trembl\w+|shak(ing|y)|heart (was |is )?(racing|pounding)|(chest|throat|stomach) (tightens|tightened|tightening|clenches|churns|churning|in knots)|stomach (was |is )?in knots|(results?|diagnosis|scan|test|verdict)( \w+){0,2} (comes?|coming|will come) (back|in|out)|waiting (for|on) (the |my )?(results?|diagnosis|verdict|scan)|(cant|cannot|can not) (think about|stop thinking about) anything else|(cold )?sweat(ing)?|(couldnt|cant|could not) (sleep|breathe)|(might|could|may|will|going to) (lose|die|fail|get hurt|be fired|get fired|crash|go wrong)|threat\w*|danger\w*|creep(y|ing)|in the dark|alone at night|(someone|somebody|something) (is |was )?(watching|following|outside|breaking in|in the house)|(check|checks|checking|checked) the (locks?|doors?|windows)|(strange|weird|unknown) (noises?|sounds?|man|men|figure|car|footsteps)|footsteps|home alone)\b",
    },
    Cue {
        emotion: "disgust",
        appraisal: "contamination or moral repulsion",
        weight: 1.0,
        pattern: r"\b(smelly|stink\w*|stank|stench|reek\w*|rott(en|ing)|mou?ld(y)?|slim(e|y)|greasy|filth\w*|dirty|grime|grimy|vomit\w*|puk(e|ed|ing)|threw up|throw(ing)? up|gag(s|ged|ging)?|nause\w*|gross(ed)?|cockroach(es)?|maggots?|sleaz\w*|despicable|depraved|sicken\w*|wrinkl(ed|es) (his|her|my|their) nose|stain(s|ed)?|sticky|crusty|droppings|urine|unwashed|(gone|went|turned) (off|bad|sour|rancid|mouldy|moldy)|rancid|lumpy|curdled|ugh|eww?|yuck|blech|lick(ed|ing) (his|her|their) fingers|picked (his|her|their) nose|spat|snot|(hair|hairs|food|gunk|crumbs|bugs) (\w+ ){0,4}(stuck|all over|everywhere))\b",
    },
    Cue {
        emotion: "surprise",
        appraisal: "an expectation violated",
        weight: 1.0,
        pattern: r"\b((didnt|did not|never|nobody|no one) (\w+ )?(expect\w*|(see|saw|seen) (it|this|that|\w+( \w+){0,6}) coming)|at the (very )?last (minute|moment|second)|(opened|opening|open) (the|a|my|our|an) \w+ and (there (was|were)|found|inside)|(just|suddenly) (announced|revealed|told (me|us))|(had|have) no idea( \w+){0,10} until|never knew( \w+){0,6} (could|had|was|were)|unexpected\w*|sudden(ly)?|all of a sudden|to (my|our|everyones) (astonishment|amazement|surprise)|turn(s|ed)? out|who knew|no way|wow|whoa|out of nowhere|caught (me|us|him|her|them) off guard)\b",
    },
    Cue {
        emotion: "pride",
        appraisal: "one's own achievement",
        weight: 1.0,
        pattern: r"\b((i|we) (finally )?(did it|made it|nailed it|aced|won|achieved|accomplished|managed to|pulled it off|earned)|all by (myself|himself|herself|themselves|ourselves)|(designed|built|made|wrote|fixed|painted|cooked|finished) (it |this |that )?(\w+ )?(myself|himself|herself|ourselves|themselves)|pleased with (myself|himself|herself|ourselves|what (i|we|he|she) )|puff(ed|s) out (his|her|my) chest|(my|our|his|her) (own )?(achievement|accomplishment)s?|beaming|chuffed|(i|we) (\w+ ){0,6}finally (ran|won|made|got|passed|beat|reached|hit|did|finished|completed|landed|earned|published|mastered|learned|learnt|built)|personal (best|record)|without a (single )?(mistake|error|hitch|fault|slip)|flawless\w*|full marks|perfect (score|game|run)|(i|we)( \w+){0,6} (on|at) (my|our) first (try|attempt|go)|taught (myself|himself|herself|ourselves|themselves)|self-taught|(i|we) (just )?got (my|the|a|our) (first |new |dream )?(job|promotion|degree|offer|licen[cs]e|place|scholarship)|(i|we|my|our)\b( \w+){0,6} (won|award|prize|medal|trophy|first place|top marks|got into|promoted)|(won|award|prize|medal|trophy)( \w+){0,6} (i|we) (helped|designed|built|made|wrote|led|coached|trained)|beat my (own )?(record|best|time))\b",
    },
    Cue {
        emotion: "shame",
        appraisal: "exposure of oneself before others",
        weight: 1.0,
        pattern: r"\b(embarrass\w*|humiliat\w+|mortif\w+|cring(e|ed|es|ing)|blush\w*|in front of (everyone|everybody|the (whole )?(class|school|team|office|room|family))|(everyone|everybody)( \w+){0,4} (saw|heard|knew|laughed|noticed|realised|realized|could tell|found out|was (watching|staring))|laughed at (me|him|her|us)|found out (i|he|she|we|about)|nobody else (was|were)|(couldnt|cant|could not|cannot) look (anyone|anybody|him|her|them|me|us|people) in the eye|caught (stealing|lying|cheating|shoplifting|red-handed|in the act)|the only one (who|not|in|wearing|without))\b",
    },
    Cue {
        emotion: "guilt",
        appraisal: "harm one caused and would undo",
        weight: 1.0,
        pattern: r"\b(sorry (i|for|that)|(my|our) fault|(i|we|he|she) (should|shouldnt|should not) have|regret\w*|apologi[sz]\w*|forgive me|feel (so )?(bad|awful|terrible|horrible) (about|for)|(i|we|he|she) (yelled|snapped|shouted|lashed out) at|let (her|him|them|you) down|(i|we) (broke|damaged|ruined|crashed|wrecked|dented|stained|lost|scratched) (my|our|his|her|their|your) (friends?|mums?|moms?|dads?|brothers?|sisters?|neighbou?rs?|partners?|wifes?|husbands?|boss|bosses|colleagues?|roommates?|flatmates?|parents?|childs?|kids?)|never (told|apologi[sz]ed to|said sorry to) (her|him|them|you)|(i|we) (promised|swore)\b( \w+){0,8} (i|we) (havent|hadnt|didnt|never)|(i|we) (havent|hadnt|never) (called|visited|written|phoned|thanked|apologi[sz]ed)|(i|we) (ate|took|used|finished|drank|spent|stole|broke|ruined|lost)\b( \w+){0,8} (for|from|of) (my|our) (friends?|mum|mom|dad|brother|sister|neighbou?r|partner|wife|husband|colleague|roommate|flatmate|parents|kids?|son|daughter)\b|(lying|lied) to (my|our|his|her|their|him|them|you))\b",
    },
    Cue {
        emotion: "gratitude",
        appraisal: "another's help or gift",
        weight: 1.0,
        pattern: r"\b(thank\w*|grateful\w*|appreciat\w+|indebted|(helped|supported|stood by|looked after|took care of|saved|rescued|covered for) (me|us|my|our)|came to (my|our) rescue|went out of (their|his|her|your) way|(i|we) owe (you|them|him|her|my \w+|our \w+)( \w+){0,3} (so much|a lot|everything|a great deal|my life)|(i|we) owe (you|them|him|her)|believ(ed|ing) in (me|us)|stood up for (me|us)|kept (me|us|my \w+|our \w+) (alive|safe|warm|company|going|sane)|to help (me|us)|(passed|made it|survived|succeeded|got through|recovered|won)( \w+){0,3} (thanks to|because of) (her|him|them|you|my \w+|our \w+)|repay (you|them|him|her)|(the \w+|a stranger|strangers|someone|somebody|they|he|she|my \w+|our \w+) (\w+ )?(saved|helped|rescued|fed|drove|carried|fixed|paid for|brought|lent|returned|protected|took care of|looked after|covered for) (me|us|my|our)\b)\b",
    },
    Cue {
        emotion: "awe",
        appraisal: "vastness that the mind must stretch to take in",
        weight: 1.0,
        pattern: r"\b(vast\w*|immense\w*|enormous|towering|majest\w+|sublime|breathtaking|spiritual|(felt|feel|feeling|made (me|us) feel) (\w+ )?(small|tiny|insignificant)|humbl(ed|ing)|in wonder|filled with wonder|sense of wonder)\b",
    },
    Cue {
        emotion: "awe",
        appraisal: "a grand natural or human work",
        weight: 0.5,
        pattern: r"\b(night sky|stars|galax\w+|universe|cosmos|earth from|ocean|mountains?|summit|canyon|glacier|waterfall|sequoias?|redwoods?|cathedral|northern lights|aurora|volcano|sunrise|sunset|sun (rise|set)|sea of clouds|horizon|(looking|gazing|staring|looked|gazed|stared) (out )?(over|across|up at|down into)|goosebumps|shivers down)\b",
    },
];

/// The cues' patterns compiled, in [`CUES`]' order (a pattern that did not compile matches
/// nothing, so the order holds; a test checks they all compile).
static COMPILED: LazyLock<Vec<Option<Regex>>> =
    LazyLock::new(|| CUES.iter().map(|c| Regex::new(c.pattern).ok()).collect());

/// One cue found: its emotion, its weight, and the words it spans (token indices, end
/// exclusive).
pub(crate) struct Found {
    pub emotion: &'static str,
    pub weight: f64,
    pub start: usize,
    pub end: usize,
}

/// The cues in `tokens` (the words of `emotion::words`), in text order.
pub(crate) fn find(tokens: &[String]) -> Vec<Found> {
    let text = tokens.join(" ");
    // Token index of a byte offset: the spaces before it.
    let index = |byte: usize| text[..byte].matches(' ').count();
    let mut out = Vec::new();
    for (cue, re) in CUES.iter().zip(COMPILED.iter()) {
        let Some(re) = re else { continue };
        for m in re.find_iter(&text) {
            out.push(Found {
                emotion: cue.emotion,
                weight: cue.weight,
                start: index(m.start()),
                end: index(m.end()) + 1,
            });
        }
    }
    out.sort_by_key(|f| f.start);
    out
}

/// The appraisal each cue stands for (for the docs' table and tests).
#[cfg(test)]
pub(crate) fn appraisals() -> Vec<(&'static str, &'static str)> {
    CUES.iter().map(|c| (c.emotion, c.appraisal)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::cognition::emotion::{EMOTIONS, words};

    #[test]
    fn every_cue_compiles_and_names_an_emotion() {
        for (cue, re) in CUES.iter().zip(COMPILED.iter()) {
            assert!(re.is_some(), "{} does not compile", cue.pattern);
        }
        for (emotion, _) in appraisals() {
            assert!(EMOTIONS.contains(&emotion), "{emotion}");
        }
        for e in EMOTIONS {
            assert!(CUES.iter().any(|c| c.emotion == e), "{e} has no cue");
        }
    }

    #[test]
    fn a_cue_spans_its_words() {
        let tokens = words("Nobody saw the resignation coming.");
        let found = find(&tokens);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].emotion, found[0].start, found[0].end),
            ("surprise", 0, 5)
        );
    }
}
