//! A small GraphQL reader: one operation's selection tree (fields,
//! aliases, arguments), enough for the queries `gh` sends, with bounds on
//! size and depth. What it does not read (fragments, directives, several
//! operations) is refused with a message, never guessed at.

use std::fmt;

/// Longest query text read.
pub const MAX_QUERY_BYTES: usize = 32 * 1024;
/// Deepest selection read.
const MAX_DEPTH: usize = 16;
/// Most fields in one query.
const MAX_FIELDS: usize = 1000;

/// An argument value as written (a `$variable` is resolved later).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Var(String),
    Str(String),
    Int(i64),
    Bool(bool),
    Null,
    /// An enum value such as `DESC`.
    Enum(String),
    Obj(Vec<(String, Value)>),
    List(Vec<Value>),
}

/// One field of a selection: `alias: name(args) { selection }`.
#[derive(Debug, Clone)]
pub struct Field {
    pub alias: Option<String>,
    pub name: String,
    pub args: Vec<(String, Value)>,
    pub selection: Vec<Field>,
    /// 1-based line and column, for error locations.
    pub line: usize,
    pub column: usize,
}

impl Field {
    /// The key the answer uses: the alias, else the name.
    pub fn key(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.name)
    }

    pub fn arg(&self, name: &str) -> Option<&Value> {
        self.args.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// The operation: `query` (or a bare selection) or `mutation`.
#[derive(Debug)]
pub struct Operation {
    pub mutation: bool,
    pub selection: Vec<Field>,
}

/// Why a query could not be read, with where.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at [{}, {}]", self.message, self.line, self.column)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Punct(char),
    Spread,
    Name(String),
    Str(String),
    Int(i64),
    End,
}

struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    line: usize,
    line_start: usize,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        Self {
            src: src.as_bytes(),
            pos: 0,
            line: 1,
            line_start: 0,
        }
    }

    fn err(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            message: message.into(),
            line: self.line,
            column: self.pos - self.line_start + 1,
        }
    }

    /// Skips blanks, commas and comments; answers the position of the
    /// next token.
    fn skip(&mut self) -> (usize, usize) {
        while let Some(&c) = self.src.get(self.pos) {
            match c {
                b'\n' => {
                    self.pos += 1;
                    self.line += 1;
                    self.line_start = self.pos;
                }
                b' ' | b'\t' | b'\r' | b',' => self.pos += 1,
                b'#' => {
                    while self.src.get(self.pos).is_some_and(|&c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
        (self.line, self.pos - self.line_start + 1)
    }

    fn next(&mut self) -> Result<(Tok, usize, usize), ParseError> {
        let (line, column) = self.skip();
        let Some(&c) = self.src.get(self.pos) else {
            return Ok((Tok::End, line, column));
        };
        let tok = match c {
            b'{' | b'}' | b'(' | b')' | b':' | b'!' | b'$' | b'=' | b'[' | b']' | b'@' => {
                self.pos += 1;
                Tok::Punct(c as char)
            }
            b'.' if self.src[self.pos..].starts_with(b"...") => {
                self.pos += 3;
                Tok::Spread
            }
            b'"' => self.string()?,
            b'-' | b'0'..=b'9' => {
                let start = self.pos;
                self.pos += 1;
                while self.src.get(self.pos).is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.src[start..self.pos]).unwrap_or("");
                Tok::Int(
                    text.parse()
                        .map_err(|_| self.err(format!("Bad number {text:?}")))?,
                )
            }
            c if c == b'_' || c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self
                    .src
                    .get(self.pos)
                    .is_some_and(|&c| c == b'_' || c.is_ascii_alphanumeric())
                {
                    self.pos += 1;
                }
                Tok::Name(String::from_utf8_lossy(&self.src[start..self.pos]).into_owned())
            }
            _ => return Err(self.err("Parse error on an unexpected character")),
        };
        Ok((tok, line, column))
    }

    fn string(&mut self) -> Result<Tok, ParseError> {
        if self.src[self.pos..].starts_with(b"\"\"\"") {
            return Err(self.err("Block strings are not read by this mirror"));
        }
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.src.get(self.pos) else {
                return Err(self.err("Unterminated string"));
            };
            self.pos += 1;
            match c {
                b'"' => break,
                b'\n' => return Err(self.err("Unterminated string")),
                b'\\' => {
                    let e = self.src.get(self.pos).copied();
                    self.pos += 1;
                    match e {
                        Some(b'"') => out.push(b'"'),
                        Some(b'\\') => out.push(b'\\'),
                        Some(b'/') => out.push(b'/'),
                        Some(b'n') => out.push(b'\n'),
                        Some(b't') => out.push(b'\t'),
                        _ => return Err(self.err("Unsupported escape in a string")),
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out)
            .map(Tok::Str)
            .map_err(|_| self.err("A string is not UTF-8"))
    }
}

struct Parser<'a> {
    lx: Lexer<'a>,
    peeked: Option<(Tok, usize, usize)>,
    fields: usize,
}

impl Parser<'_> {
    fn peek(&mut self) -> Result<&Tok, ParseError> {
        let p = match self.peeked.take() {
            Some(p) => p,
            None => self.lx.next()?,
        };
        Ok(&self.peeked.insert(p).0)
    }

    fn bump(&mut self) -> Result<(Tok, usize, usize), ParseError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lx.next(),
        }
    }

    fn expect(&mut self, c: char) -> Result<(), ParseError> {
        match self.bump()? {
            (Tok::Punct(p), ..) if p == c => Ok(()),
            (t, line, column) => Err(ParseError {
                message: format!("Expected {c:?}, found {}", shown(&t)),
                line,
                column,
            }),
        }
    }

    fn name(&mut self) -> Result<(String, usize, usize), ParseError> {
        match self.bump()? {
            (Tok::Name(n), line, column) => Ok((n, line, column)),
            (t, line, column) => Err(ParseError {
                message: format!("Expected a name, found {}", shown(&t)),
                line,
                column,
            }),
        }
    }

    fn operation(&mut self) -> Result<Operation, ParseError> {
        let mutation = match self.peek()?.clone() {
            Tok::Punct('{') => false,
            Tok::Name(n) if n == "query" || n == "mutation" => {
                self.bump()?;
                if let Tok::Name(_) = self.peek()? {
                    self.bump()?;
                }
                if *self.peek()? == Tok::Punct('(') {
                    self.skip_variable_definitions()?;
                }
                n == "mutation"
            }
            Tok::Name(n) if n == "fragment" || n == "subscription" => {
                return Err(self.lx.err(format!("{n} is not served by this mirror")));
            }
            t => return Err(self.lx.err(format!("Parse error on {}", shown(&t)))),
        };
        if *self.peek()? == Tok::Punct('@') {
            return Err(self.lx.err("Directives are not served by this mirror"));
        }
        let selection = self.selection(1)?;
        match self.bump()? {
            (Tok::End, ..) => Ok(Operation {
                mutation,
                selection,
            }),
            (_, line, column) => Err(ParseError {
                message: "Only one operation per request is served by this mirror".into(),
                line,
                column,
            }),
        }
    }

    /// `($owner: String!, $n: Int = 3)`: the types do not matter here.
    fn skip_variable_definitions(&mut self) -> Result<(), ParseError> {
        self.expect('(')?;
        let mut depth = 1;
        while depth > 0 {
            match self.bump()?.0 {
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') => depth -= 1,
                Tok::End => return Err(self.lx.err("Unterminated variable definitions")),
                _ => {}
            }
        }
        Ok(())
    }

    fn selection(&mut self, depth: usize) -> Result<Vec<Field>, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self
                .lx
                .err(format!("Selections nested deeper than {MAX_DEPTH}")));
        }
        self.expect('{')?;
        let mut out = Vec::new();
        loop {
            match self.peek()? {
                Tok::Punct('}') => {
                    self.bump()?;
                    return Ok(out);
                }
                Tok::Spread => return Err(self.lx.err("Fragments are not served by this mirror")),
                _ => out.push(self.field(depth)?),
            }
        }
    }

    fn field(&mut self, depth: usize) -> Result<Field, ParseError> {
        self.fields += 1;
        if self.fields > MAX_FIELDS {
            return Err(self.lx.err(format!("More than {MAX_FIELDS} fields")));
        }
        let (first, line, column) = self.name()?;
        let (alias, name) = if *self.peek()? == Tok::Punct(':') {
            self.bump()?;
            (Some(first), self.name()?.0)
        } else {
            (None, first)
        };
        let mut args = Vec::new();
        if *self.peek()? == Tok::Punct('(') {
            self.bump()?;
            while *self.peek()? != Tok::Punct(')') {
                let (k, ..) = self.name()?;
                self.expect(':')?;
                args.push((k, self.value(0)?));
            }
            self.bump()?;
        }
        if *self.peek()? == Tok::Punct('@') {
            return Err(self.lx.err("Directives are not served by this mirror"));
        }
        let selection = if *self.peek()? == Tok::Punct('{') {
            self.selection(depth + 1)?
        } else {
            Vec::new()
        };
        Ok(Field {
            alias,
            name,
            args,
            selection,
            line,
            column,
        })
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.lx.err("Values nested too deep"));
        }
        let (t, line, column) = self.bump()?;
        Ok(match t {
            Tok::Punct('$') => Value::Var(self.name()?.0),
            Tok::Str(s) => Value::Str(s),
            Tok::Int(n) => Value::Int(n),
            Tok::Name(n) => match n.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "null" => Value::Null,
                _ => Value::Enum(n),
            },
            Tok::Punct('{') => {
                let mut fields = Vec::new();
                while *self.peek()? != Tok::Punct('}') {
                    let (k, ..) = self.name()?;
                    self.expect(':')?;
                    fields.push((k, self.value(depth + 1)?));
                }
                self.bump()?;
                Value::Obj(fields)
            }
            Tok::Punct('[') => {
                let mut items = Vec::new();
                while *self.peek()? != Tok::Punct(']') {
                    items.push(self.value(depth + 1)?);
                }
                self.bump()?;
                Value::List(items)
            }
            t => {
                return Err(ParseError {
                    message: format!("Expected a value, found {}", shown(&t)),
                    line,
                    column,
                });
            }
        })
    }
}

fn shown(t: &Tok) -> String {
    match t {
        Tok::Punct(c) => format!("{c:?}"),
        Tok::Spread => "\"...\"".into(),
        Tok::Name(n) => format!("{:?}", n.chars().take(40).collect::<String>()),
        Tok::Str(_) => "a string".into(),
        Tok::Int(n) => n.to_string(),
        Tok::End => "the end of the query".into(),
    }
}

/// Reads one operation.
pub fn parse(query: &str) -> Result<Operation, ParseError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(ParseError {
            message: format!("The query is longer than {MAX_QUERY_BYTES} bytes"),
            line: 1,
            column: 1,
        });
    }
    Parser {
        lx: Lexer::new(query),
        peeked: None,
        fields: 0,
    }
    .operation()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_queries_gh_sends() {
        // As gh 2.23's shurcooL client writes them.
        let q = "query RepositoryReleaseByTag($name:String!$owner:String!$tagName:String!)\
                 {repository(owner: $owner, name: $name){release(tagName: $tagName){databaseId,isDraft}}}";
        let op = parse(q).unwrap();
        assert!(!op.mutation);
        let repo = &op.selection[0];
        assert_eq!(repo.name, "repository");
        assert_eq!(repo.arg("owner"), Some(&Value::Var("owner".into())));
        let rel = &repo.selection[0];
        assert_eq!(rel.arg("tagName"), Some(&Value::Var("tagName".into())));
        let names: Vec<_> = rel.selection.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["databaseId", "isDraft"]);

        let q = "query RepositoryReleaseList($endCursor:String$name:String!$owner:String!$perPage:Int!)\
                 {repository(owner: $owner, name: $name){releases(first: $perPage, orderBy: \
                 {field: CREATED_AT, direction: DESC}, after: $endCursor){nodes{name,tagName,isDraft,\
                 isLatest,isPrerelease,createdAt,publishedAt},pageInfo{hasNextPage,endCursor}}}}";
        let op = parse(q).unwrap();
        let rels = &op.selection[0].selection[0];
        assert_eq!(
            rels.arg("orderBy"),
            Some(&Value::Obj(vec![
                ("field".into(), Value::Enum("CREATED_AT".into())),
                ("direction".into(), Value::Enum("DESC".into())),
            ]))
        );
        assert_eq!(rels.selection[1].selection[1].name, "endCursor");
    }

    #[test]
    fn aliases_literals_and_comments() {
        let op = parse(
            "{ # hello\n a: repository(owner: \"o\\\"x\", n: -3, l: [1 2], b: true) { id } }",
        )
        .unwrap();
        let f = &op.selection[0];
        assert_eq!(f.key(), "a");
        assert_eq!(f.arg("owner"), Some(&Value::Str("o\"x".into())));
        assert_eq!(f.arg("n"), Some(&Value::Int(-3)));
        assert_eq!(f.line, 2);
    }

    #[test]
    fn refuses_what_it_does_not_read() {
        for (q, says) in [
            ("{ a { ...F } }", "Fragments"),
            ("{ a @include(if: true) }", "Directives"),
            ("{ a } { b }", "one operation"),
            ("{ a(x: \"oops) }", "Unterminated"),
            ("{ a ", "Expected a name"),
            ("subscription { a }", "subscription"),
        ] {
            let e = parse(q).unwrap_err().to_string();
            assert!(e.contains(says), "{q}: {e}");
        }
        let deep = format!("{}{}", "{a".repeat(40), "}".repeat(40));
        assert!(parse(&deep).unwrap_err().to_string().contains("deeper"));
        assert!(parse(&"{a}".repeat(20_000)).is_err());
    }
}
