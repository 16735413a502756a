//! The text of engine statements as sent: `core/sql/`'s files without their comments and
//! indentation.
//!
//! The files document every statement at length; their comments are for readers, not for the
//! server, yet a statement's text is hashed on every execution by the libraries' statement caches
//! (deadpool-postgres, sqlx and diesel key prepared statements by their SQL), and sent whole on
//! every execution where statements go unnamed (behind a transaction-mode pooler). The single
//! insert's file is 1,533 bytes, its statement 421. [`compact`] keeps what the server reads, and a
//! first line naming the file, so `pg_stat_activity` and the server's log still say which
//! statement runs.

/// `sql` with its comments removed and every run of whitespace outside quotes made one space,
/// after a `-- pgmill <name>` line. Quoted text (`'...'`, `E'...'`, `"..."`, `$tag$...$tag$`) is
/// kept as written; a comment counts as whitespace, as it does for the server.
pub(crate) fn compact(name: &str, sql: &str) -> String {
    let mut out = format!("-- pgmill {name}\n");
    let body_start = out.len();
    let chars: Vec<char> = sql.chars().collect();
    let mut i = 0;
    // A separator is owed before the next token: whitespace or a comment came before it.
    let mut space = false;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            space = true;
            i += 1;
            continue;
        }
        if c == '-' && next == Some('-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            space = true;
            continue;
        }
        if c == '/' && next == Some('*') {
            i = block_comment_end(&chars, i);
            space = true;
            continue;
        }
        if space && out.len() > body_start {
            out.push(' ');
        }
        space = false;
        let end = match c {
            '\'' => quoted_end(&chars, i, '\'', escapes_backslash(&chars, i)),
            '"' => quoted_end(&chars, i, '"', false),
            '$' => dollar_quote_end(&chars, i).unwrap_or(i + 1),
            _ => i + 1,
        };
        out.extend(&chars[i..end]);
        i = end;
    }
    out
}

/// After the block comment opening at `start` (`/*`), which nests as the server's does.
fn block_comment_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0;
    let mut i = start;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1).copied()) {
            ('/', Some('*')) => {
                depth += 1;
                i += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    i
}

/// Whether the string literal opening at `quote` is an escape string (`E'...'`), in which a
/// backslash escapes the next character.
fn escapes_backslash(chars: &[char], quote: usize) -> bool {
    quote > 0
        && matches!(chars[quote - 1], 'E' | 'e')
        && (quote < 2 || !is_ident_char(chars[quote - 2]))
}

/// After the literal opening at `start` with `quote`, a doubled quote standing for itself.
fn quoted_end(chars: &[char], start: usize, quote: char, backslash: bool) -> usize {
    let mut i = start + 1;
    while i < chars.len() {
        let c = chars[i];
        if backslash && c == '\\' {
            i += 2;
        } else if c == quote {
            if chars.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    chars.len()
}

/// After the dollar-quoted literal opening at `start`, if one opens there (`$$` or `$tag$`, not a
/// parameter such as `$1` nor a `$` inside an identifier).
fn dollar_quote_end(chars: &[char], start: usize) -> Option<usize> {
    if start > 0 && is_ident_char(chars[start - 1]) {
        return None;
    }
    let mut i = start + 1;
    while i < chars.len() && chars[i] != '$' {
        let c = chars[i];
        let allowed = if i == start + 1 {
            c.is_alphabetic() || c == '_'
        } else {
            is_ident_char(c)
        };
        if !allowed {
            return None;
        }
        i += 1;
    }
    if i >= chars.len() {
        return None;
    }
    let tag = &chars[start..=i];
    let mut j = i + 1;
    while j + tag.len() <= chars.len() {
        if chars[j..j + tag.len()] == *tag {
            return Some(j + tag.len());
        }
        j += 1;
    }
    Some(chars.len())
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::catalog::Query;

    #[test]
    fn comments_and_indentation_go_and_the_name_comes_first() {
        let sql = "-- Does a thing.\n-- $1: an id\nSELECT a,\n    b -- the b\nFROM t\n/* a\n /* nested */ block */WHERE x = $1\n";
        assert_eq!(
            compact("thing", sql),
            "-- pgmill thing\nSELECT a, b FROM t WHERE x = $1"
        );
    }

    #[test]
    fn a_comment_between_tokens_still_separates_them() {
        assert_eq!(
            compact("q", "SELECT 1--x\nAS n"),
            "-- pgmill q\nSELECT 1 AS n"
        );
        assert_eq!(
            compact("q", "SELECT 1/*x*/AS n"),
            "-- pgmill q\nSELECT 1 AS n"
        );
    }

    #[test]
    fn quoted_text_is_kept_as_written() {
        let sql = "SELECT '--  not a comment', 'it''s  /* here */', \"a  --\"\"b\", \
                   E'\\'  --', $$  -- x\n $$, $tag$ '$$' -- $tag$, $1, a$b  ,  x";
        assert_eq!(
            compact("q", sql),
            "-- pgmill q\nSELECT '--  not a comment', 'it''s  /* here */', \"a  --\"\"b\", \
             E'\\'  --', $$  -- x\n $$, $tag$ '$$' -- $tag$, $1, a$b , x"
        );
    }

    #[test]
    fn every_engine_statement_keeps_its_tokens() {
        for q in Query::ALL {
            let compacted = compact(q.name(), q.template());
            let (head, body) = compacted.split_once('\n').unwrap();
            assert_eq!(head, format!("-- pgmill {}", q.name()));
            assert!(
                !body.contains("--") && !body.contains('\n'),
                "{q:?}: {body}"
            );
            // The same words in the same order as the file's code, comments aside.
            let code_words = |s: &str| -> Vec<String> {
                s.lines()
                    .map(|l| l.split("--").next().unwrap_or(""))
                    .flat_map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
                    .collect()
            };
            assert_eq!(code_words(body), code_words(q.template()), "{q:?}");
        }
    }
}
