//! A small multi-language set of symbols with known best matches.

use acms_keyword::{KeywordDoc, KeywordIndex};
use tempfile::TempDir;

pub fn doc(
    id: u64,
    path: &str,
    qualified_name: &str,
    kind: &str,
    signature: &str,
    doc: &str,
    body: &str,
) -> KeywordDoc {
    let name = qualified_name
        .rsplit(['.', ':'])
        .next()
        .unwrap_or(qualified_name);
    KeywordDoc {
        id,
        path: path.into(),
        qualified_name: qualified_name.into(),
        name: name.into(),
        kind: kind.into(),
        signature: signature.into(),
        doc: doc.into(),
        body: format!("{signature}\n{body}"),
    }
}

pub fn docs() -> Vec<KeywordDoc> {
    vec![
        doc(
            1,
            "web/templating.py",
            "web.templating.render_template",
            "function",
            "def render_template(template_name, **context)",
            "Render a template file with the given context and return the response body.",
            "    source = load_source(template_name)\n    return compile(source).render(context)",
        ),
        doc(
            2,
            "web/response.py",
            "web.response.make_response",
            "function",
            "def make_response(rv, status=None, headers=None)",
            "Build a response object from the return value of a view.",
            "    if isinstance(rv, Response):\n        return rv\n    return Response(rv, status, headers)",
        ),
        doc(
            3,
            "src/users/profile.js",
            "profile.getUserName",
            "function",
            "function getUserName(user)",
            "Returns the display name of a user.",
            "  return user.firstName + ' ' + user.lastName;",
        ),
        doc(
            4,
            "src/users.rs",
            "users::get_user_name",
            "function",
            "pub fn get_user_name(id: UserId) -> Option<String>",
            "Looks up a user by id and returns their login name.",
            "    USERS.get(&id).map(|u| u.login.clone())",
        ),
        doc(
            5,
            "src/db/user_repository.ts",
            "db.UserRepository",
            "class",
            "export class UserRepository extends Repository<User>",
            "Stores users in the database.",
            "  async findByEmail(email: string): Promise<User | null> { return this.findOne({ email }); }",
        ),
        doc(
            6,
            "net/server.py",
            "net.server.HTTPServer2",
            "class",
            "class HTTPServer2(BaseServer)",
            "A threaded server that speaks HTTP/1.1 and HTTP/2.",
            "    def serve_forever(self):\n        while self.running:\n            self.handle_request()",
        ),
        doc(
            7,
            "src/config/parser.rs",
            "config::parser::parse_config",
            "function",
            "pub fn parse_config(text: &str) -> Result<Config, ConfigError>",
            "Parses the TOML configuration file and validates every key.",
            "    let table: toml::Table = text.parse()?;\n    Config::from_table(table)",
        ),
        doc(
            8,
            "web/cache.py",
            "web.cache.TemplateCache",
            "class",
            "class TemplateCache(dict)",
            "Caches compiled templates by file name so they are only loaded once.",
            "    def __missing__(self, key):\n        value = self[key] = compile(load_source(key))\n        return value",
        ),
        doc(
            9,
            "tests/test_templating.py",
            "tests.test_templating.test_render_template",
            "function",
            "def test_render_template()",
            "",
            "    assert render_template('index.html', title='x') == '<h1>x</h1>'",
        ),
        doc(
            10,
            "notifications/mailer.py",
            "notifications.mailer.send_email",
            "function",
            "def send_email(to, subject, body)",
            "Sends an email through the configured SMTP relay.",
            "    with smtplib.SMTP(settings.SMTP_HOST) as smtp:\n        smtp.send_message(build(to, subject, body))",
        ),
        doc(
            11,
            "src/text/normalize.rs",
            "text::normalize::fold_case",
            "function",
            "pub fn fold_case(s: &str) -> String",
            "Maps Größe and other mixed-case words to one form.",
            "    s.to_lowercase()",
        ),
        doc(
            12,
            "src/users.rs",
            "users::get_user_email",
            "function",
            "pub fn get_user_email(id: UserId) -> Option<Email>",
            "Returns the email address of a user.",
            "    USERS.get(&id).map(|u| u.email.clone())",
        ),
    ]
}

/// A fresh index holding [`docs`], in a temporary directory the caller keeps alive.
pub fn index() -> (TempDir, KeywordIndex) {
    index_of(&docs())
}

/// A fresh index holding `docs`, in a temporary directory the caller keeps alive.
pub fn index_of(docs: &[KeywordDoc]) -> (TempDir, KeywordIndex) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut index = KeywordIndex::create_or_open(tmp.path().join("kw")).expect("create");
    index.apply(&[], docs).expect("apply");
    (tmp, index)
}

/// Ids of the hits for `query`, best first.
pub fn ids(index: &KeywordIndex, query: &str, limit: usize) -> Vec<u64> {
    index
        .search(query, limit)
        .expect("search never fails")
        .iter()
        .map(|h| h.id)
        .collect()
}
