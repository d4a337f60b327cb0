//! The GraphQL request read: `apollo-parser` (a maintained, spec-complete
//! parser) reads the text under a size, token and nesting bound, and this
//! module keeps one operation's selection tree (fields, aliases, arguments)
//! for the resolver in `graphql.rs`.
//!
//! Invariant: what the resolver gets is exactly what the query says; what it
//! cannot answer faithfully (fragments, directives, several operations,
//! subscriptions, floats) is refused with a message and where, never
//! guessed at or dropped.

use std::fmt;

use apollo_parser::Parser;
use apollo_parser::cst::{self, CstNode};

/// Longest query text read.
pub const MAX_QUERY_BYTES: usize = 32 * 1024;
/// Deepest nesting read, selections and argument values together.
const MAX_DEPTH: usize = 16;
/// Most tokens (blanks and commas included) read.
const MAX_TOKENS: usize = 10_000;
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

/// Reads one operation.
pub fn parse(query: &str) -> Result<Operation, ParseError> {
    // Byte-wise, so an index inside a character cannot split it.
    let at = |message: String, index: usize| {
        let before = &query.as_bytes()[..index.min(query.len())];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |n| n + 1);
        ParseError {
            message,
            line: 1 + before.iter().filter(|&&b| b == b'\n').count(),
            column: before.len() - line_start + 1,
        }
    };
    if query.len() > MAX_QUERY_BYTES {
        return Err(at(
            format!("The query is longer than {MAX_QUERY_BYTES} bytes"),
            0,
        ));
    }
    let tree = Parser::new(query)
        .recursion_limit(MAX_DEPTH)
        .token_limit(MAX_TOKENS)
        .parse();
    if let Some(e) = tree.errors().next() {
        let index = e.index();
        let message = if tree.recursion_limit().high > MAX_DEPTH {
            format!("Selections or values nested deeper than {MAX_DEPTH}")
        } else if e.is_limit() {
            format!("The query has more than {MAX_TOKENS} tokens")
        } else {
            capitalized(e.message())
        };
        return Err(at(message, index));
    }
    let mut reader = Reader { at, fields: 0 };
    let mut definitions = tree.document().definitions();
    let op = match definitions.next() {
        Some(cst::Definition::OperationDefinition(op)) => op,
        Some(other) => {
            let says = match other {
                cst::Definition::FragmentDefinition(_) => "Fragments are",
                _ => "Type system definitions are",
            };
            return Err(reader.refuse(&format!("{says} not served by this mirror"), &other));
        }
        None => return Err(at("The query holds no operation".into(), 0)),
    };
    if let Some(extra) = definitions.next() {
        return Err(reader.refuse(
            "Only one operation per request is served by this mirror",
            &extra,
        ));
    }
    reader.operation(&op)
}

/// Turns the parsed tree into fields, refusing what the resolver does not
/// answer; `at` places a message at a byte of the query.
struct Reader<F> {
    at: F,
    fields: usize,
}

impl<F: Fn(String, usize) -> ParseError> Reader<F> {
    fn refuse(&self, message: &str, node: &impl CstNode) -> ParseError {
        (self.at)(message.into(), node.syntax().text_range().start().into())
    }

    fn operation(&mut self, op: &cst::OperationDefinition) -> Result<Operation, ParseError> {
        let kind = op.operation_type();
        if let Some(t) = kind.as_ref().filter(|t| t.subscription_token().is_some()) {
            return Err(self.refuse("subscription is not served by this mirror", t));
        }
        if let Some(d) = op.directives() {
            return Err(self.refuse("Directives are not served by this mirror", &d));
        }
        let Some(set) = op.selection_set() else {
            return Err(self.refuse("The operation has no selection", op));
        };
        Ok(Operation {
            mutation: kind.is_some_and(|t| t.mutation_token().is_some()),
            selection: self.selection(&set)?,
        })
    }

    fn selection(&mut self, set: &cst::SelectionSet) -> Result<Vec<Field>, ParseError> {
        let mut out = Vec::new();
        for s in set.selections() {
            let f = match s {
                cst::Selection::Field(f) => f,
                other => return Err(self.refuse("Fragments are not served by this mirror", &other)),
            };
            self.fields += 1;
            if self.fields > MAX_FIELDS {
                return Err(self.refuse(&format!("More than {MAX_FIELDS} fields"), &f));
            }
            out.push(self.field(&f)?);
        }
        Ok(out)
    }

    fn field(&mut self, f: &cst::Field) -> Result<Field, ParseError> {
        if let Some(d) = f.directives() {
            return Err(self.refuse("Directives are not served by this mirror", &d));
        }
        let mut args = Vec::new();
        for a in f.arguments().iter().flat_map(|a| a.arguments()) {
            args.push((name(a.name()), self.value(a.value(), &a)?));
        }
        let place = (self.at)(String::new(), f.syntax().text_range().start().into());
        Ok(Field {
            alias: f.alias().map(|a| name(a.name())),
            name: name(f.name()),
            args,
            selection: match f.selection_set() {
                Some(set) => self.selection(&set)?,
                None => Vec::new(),
            },
            line: place.line,
            column: place.column,
        })
    }

    /// A value as written; `owner` places an error for a missing one.
    fn value(&self, v: Option<cst::Value>, owner: &impl CstNode) -> Result<Value, ParseError> {
        let Some(v) = v else {
            return Err(self.refuse("Expected a value", owner));
        };
        Ok(match &v {
            cst::Value::Variable(x) => Value::Var(name(x.name())),
            cst::Value::StringValue(s) => Value::Str(String::from(s)),
            cst::Value::IntValue(n) => match n.syntax().text().to_string().parse() {
                Ok(n) => Value::Int(n),
                Err(_) => return Err(self.refuse("Bad number: not a 64-bit integer", n)),
            },
            cst::Value::FloatValue(x) => {
                return Err(self.refuse("Floats are not read by this mirror", x));
            }
            cst::Value::BooleanValue(b) => Value::Bool(b.true_token().is_some()),
            cst::Value::NullValue(_) => Value::Null,
            cst::Value::EnumValue(e) => Value::Enum(e.text().to_string()),
            cst::Value::ListValue(l) => Value::List(
                l.values()
                    .map(|x| self.value(Some(x), l))
                    .collect::<Result<_, _>>()?,
            ),
            cst::Value::ObjectValue(o) => Value::Obj(
                o.object_fields()
                    .map(|kv| Ok((name(kv.name()), self.value(kv.value(), &kv)?)))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

/// A name's text; the parser reported no error, so every name is there.
fn name(n: Option<cst::Name>) -> String {
    n.map(|n| n.text().to_string()).unwrap_or_default()
}

/// The parser's message as GitHub's errors are written: a capital first.
fn capitalized(message: &str) -> String {
    let mut c = message.chars();
    c.next()
        .map(|first| first.to_uppercase().chain(c).collect())
        .unwrap_or_default()
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
            // apollo-parser's words for a selection cut short (the
            // hand-written reader said "Expected a name").
            ("{ a ", "Expected R_CURLY"),
            ("subscription { a }", "subscription"),
            ("fragment F on R { a } { ...F }", "Fragments"),
            ("{ a(x: 1.5) }", "Floats"),
            ("{ a(x: 99999999999999999999) }", "Bad number"),
        ] {
            let e = parse(q).unwrap_err().to_string();
            assert!(e.contains(says), "{q}: {e}");
        }
        let deep = format!("{}{}", "{a".repeat(40), "}".repeat(40));
        assert!(parse(&deep).unwrap_err().to_string().contains("deeper"));
        let deep_value = format!("{{ a(x: {}1{}) }}", "[".repeat(40), "]".repeat(40));
        assert!(
            parse(&deep_value)
                .unwrap_err()
                .to_string()
                .contains("deeper")
        );
        assert!(parse(&"{a}".repeat(20_000)).is_err());
        let many = format!("{{ {} }}", "a ".repeat(6000));
        assert!(parse(&many).unwrap_err().to_string().contains("tokens"));
        let wide = format!("{{ {} }}", "a ".repeat(1500));
        assert!(
            parse(&wide)
                .unwrap_err()
                .to_string()
                .contains("1000 fields")
        );
        let e = parse("{\n  a @skip(if: true) }").unwrap_err();
        assert_eq!((e.line, e.column), (2, 5));
        // Not ASCII: placed by byte, never by a split character.
        for q in [
            "{ a(x: \"é\") é }",
            "ééé",
            "{ a(x: \"\u{1F600}\") }\u{1F600}",
        ] {
            assert!(parse(q).is_err(), "{q}");
        }
    }
}
