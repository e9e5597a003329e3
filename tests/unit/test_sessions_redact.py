"""Redaction: every kind is caught, ordinary code is left alone, and parsed events are clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag import redact as redact_module
from selene_dag.redact import SECRET_KINDS, redact, redact_counts
from selene_dag.sessions.parsers import parse_file
from tests.support.sessions import ALL_FILES, PLANTED, REAL_CLAUDE, plant_secrets, secret_values

# What each kind matches, without the lookarounds, back-references and conditionals
# (which ``from_regex`` cannot generate): each still matches what its kind matches.
_ENV = redact_module._ENV_NAME
_VALUE = r"[A-Za-z][A-Za-z0-9]{4}[0-9!@#%+/=~][A-Za-z0-9]{0,8}"
_SHAPES = {
    "private_key": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    "anthropic_key": r"sk-ant-[A-Za-z0-9_\-]{20,}",
    "openai_key": r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_]{20,}",
    "stripe_key": r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
    "aws_access_key": r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    "aws_secret_key": r"(?:aws|AWS|secret) key is [a-z]{13}[A-Z]{13}[0-9]{14}",
    "github_token": r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    "google_api_key": r"AIza[0-9A-Za-z_\-]{35}",
    "huggingface_token": r"hf_[A-Za-z0-9]{34}",
    "sendgrid_key": r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}",
    "azure_key": r"(?:AccountKey|SharedAccessKey|account_key)=[A-Za-z0-9+/]{40,88}={1,2}",
    "slack_token": r"xox[abposr]-[A-Za-z0-9\-]{10,}",
    "npm_token": r"npm_[A-Za-z0-9]{36}",
    "gitlab_token": r"glpat-[A-Za-z0-9_\-]{20,30}",
    "webhook_url": r"https://hooks\.slack\.com/services/T[A-Z0-9]{8}/B[A-Z0-9]{8}/[A-Za-z0-9]{24}",
    # A session's value, not a setting (theme=Dark is kept): it holds a digit.
    "cookie": r"(?:Cookie|Set-Cookie|cookie): [a-z_]{1,10}=[A-Za-z0-9]{5,19}[0-9](?:; [a-z]{1,8}=[a-z0-9]{1,8})?",
    "bearer": r"[Bb]earer\s+[A-Za-z0-9\-._~+/]{16,}",
    "basic_auth": r"(?i:authorization): Basic [A-Za-z0-9+/]{4}[0-9+/][A-Za-z0-9+/]{3,}",
    "url_password": r"[a-z]{2,8}://[a-z]{1,8}:[A-Za-z0-9]{1,12}@[a-z]{1,8}\.com",
    # A password other than the user's name (-u www-data:www-data is a user and group).
    "user_password": r"curl (?:-u|--user) [a-z]{1,8}:[A-Z][A-Za-z0-9]{0,12}",
    "jwt": r"eyJ[A-Za-z0-9_\-]{8,20}\.eyJ[A-Za-z0-9_\-]{8,20}\.[A-Za-z0-9_\-]{0,20}",
    "service_token": r"(?:dop_v1_[a-f0-9]{64}|shpat_[a-fA-F0-9]{32}|lin_api_[A-Za-z0-9]{40}"
    r"|gsk_[A-Za-z0-9]{48}|tvly-[A-Za-z0-9]{32}|pplx-[A-Za-z0-9]{48}|r8_[A-Za-z0-9]{37})",
    "env_secret": rf"{_ENV}=[A-Za-z0-9]{{5}}[a-z][A-Za-z0-9]{{0,8}}",
    "config_secret": r"[a-z_]{0,8}(?i:password|passwd|secret|token|api_?key|access_?key|private_?key|auth_?key)"
    rf"(?:=| ?: ?| = )(?:{_VALUE}|\"{_VALUE}\"|'{_VALUE}')",
}


# The development storage emulator's well-known key (published, not a secret).
_AZURE = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_each_kind_is_redacted(kind: str) -> None:
    secret = PLANTED[kind]
    text, counts = redact_counts(f"before {secret} after")
    assert counts == {kind: 1}
    assert f"[REDACTED:{kind}]" in text
    assert text.startswith("before ") and text.endswith(" after")
    for value in secret_values():
        assert value not in text


def test_all_kinds_are_planted() -> None:
    assert set(PLANTED) == set(SECRET_KINDS)


def test_env_assignments_keep_their_name() -> None:
    text = 'export GITHUB_TOKEN=abcdef123456\nAPI_KEY="s3cr3tvalue"\nSECRET_KEY = "django-insecure"'
    assert redact(text) == (
        'export GITHUB_TOKEN=[REDACTED:env_secret]\nAPI_KEY="[REDACTED:env_secret]"\n'
        'SECRET_KEY = "[REDACTED:env_secret]"'
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a secret inside JSON-escaped text takes only itself with it
        (
            '{"content": "API_TOKEN=abc123def456\\nPORT=8080\\nDEBUG=true\\n"}',
            '{"content": "API_TOKEN=[REDACTED:env_secret]\\nPORT=8080\\nDEBUG=true\\n"}',
        ),
        (
            "DATABASE_URL=postgres://admin:ZqGMx81k@db.example.com:5432/app",
            "DATABASE_URL=postgres://admin:[REDACTED:url_password]@db.example.com:5432/app",
        ),
        ("mysql://root:rootpw@localhost/db", "mysql://root:[REDACTED:url_password]@localhost/db"),
        ("password=SuperSecretPw123!", "password=[REDACTED:config_secret]"),
        (
            "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
            "[default]\naws_secret_access_key = [REDACTED:aws_secret_key]\n",
        ),
        (
            '{"password": "hunter22", "apiKey": "abcdef123456", "max_tokens": 4000}',
            '{"password": "[REDACTED:config_secret]", "apiKey": "[REDACTED:config_secret]", '
            '"max_tokens": 4000}',
        ),
        ('{\\"password\\": \\"hunter22\\"}', '{\\"password\\": \\"[REDACTED:config_secret]\\"}'),
        (
            "db:\n  password: hunter22\n  user: admin\n",
            "db:\n  password: [REDACTED:config_secret]\n  user: admin\n",
        ),
        ("--password=s3cr3t!!", "--password=[REDACTED:config_secret]"),
        (
            "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz",
            "OPENAI_API_KEY=[REDACTED:openai_key]",
        ),
        (
            'curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA==" https://x.io',
            'curl -H "Authorization: Basic [REDACTED:basic_auth]" https://x.io',
        ),
        ("İstanbul password=hunter22", "İstanbul password=[REDACTED:config_secret]"),
        # Code's other ways to assign one: a dict key, :=, =>, a quoted value with spaces.
        (
            'os.environ["OPENAI_API_KEY"] = "QAosEnvKeyValue"',
            'os.environ["OPENAI_API_KEY"] = "[REDACTED:config_secret]"',
        ),
        ("app.secret_key = 'QAflaskSecretXYZ'", "app.secret_key = '[REDACTED:config_secret]'"),
        ('token := "abcdef123456"', 'token := "[REDACTED:config_secret]"'),
        ("api_key => 'abcdefghij'", "api_key => '[REDACTED:config_secret]'"),
        ('password: "hunter 22 pass"', 'password: "[REDACTED:config_secret]"'),
        ("x-api-key: 0123456789abcdef", "x-api-key: [REDACTED:config_secret]"),
        ("redis://:redispass123@cache:6379", "redis://:[REDACTED:url_password]@cache:6379"),
        ("authorization: basic dXNlcjpwYXNzd29yZA==", "authorization: basic [REDACTED:basic_auth]"),
        # A query string's next parameter is not the secret's.
        ("?api_key=abc123def456&x=1", "?api_key=[REDACTED:config_secret]&x=1"),
        ("curl -u admin:s3cretpw https://x", "curl -u admin:[REDACTED:user_password] https://x"),
        ("Authorization: Token abcdef1234567890abcd", "Authorization: Token [REDACTED:bearer]"),
        (
            "DB_PASS=hunter22 MYSQL_PWD=hunter22",
            "DB_PASS=[REDACTED:env_secret] MYSQL_PWD=[REDACTED:env_secret]",
        ),
        # A key cut before its END line (a truncated tool output), and a PGP block.
        ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEabc+/=\n", "[REDACTED:private_key]"),
        # Command lines: mysql's -p joined to its value, --password value, --api-key value.
        ("mysql -u root -pS3cretPw db", "mysql -u root -p[REDACTED:user_password] db"),
        ("mysqldump -uroot -p'my pw' db", "mysqldump -uroot -p'[REDACTED:user_password]' db"),
        ("tool --password hunter2 --host x", "tool --password [REDACTED:user_password] --host x"),
        (
            "cli --api-key abc123def --hf-token hf_9abc",
            "cli --api-key [REDACTED:user_password] --hf-token [REDACTED:user_password]",
        ),
        ("--password 'hunter 22 yes'", "--password '[REDACTED:user_password]'"),
        ("sshpass -p s3cret ssh host", "sshpass -p [REDACTED:user_password] ssh host"),
        (
            "docker login -u me -p hunter22 r.io",
            "docker login -u me -p [REDACTED:user_password] r.io",
        ),
        (
            '<add key="ApiKey" value="abc123" />',
            '<add key="ApiKey" value="[REDACTED:config_secret]" />',
        ),
        (
            "headers = {'Cookie': 'session=abc123def456'}",
            "headers = {'Cookie': '[REDACTED:cookie]'}",
        ),
        ("Server=db;Uid=sa;Pwd=letmein", "Server=db;Uid=sa;Pwd=[REDACTED:config_secret]"),
        # Cookies, webhooks, npm tokens.
        (
            "curl -H 'Cookie: session=abc123def; csrftoken=zz' x",
            "curl -H 'Cookie: [REDACTED:cookie]' x",
        ),
        ('curl --cookie "sid=abcdef123" x', 'curl --cookie "[REDACTED:cookie]" x'),
        ("Set-Cookie: token=QWxhZGRpbjpv; Path=/", "Set-Cookie: [REDACTED:cookie]"),
        (
            "https://discord.com/api/webhooks/123456789/AbCdEfGhIjKlMnOpQrStUvWx",
            "https://discord.com/api/webhooks/123456789/[REDACTED:webhook_url]",
        ),
        # A password holding an @, a value holding $ or an escaped quote, letters only
        # where a connection string's ; says it is one, XML elements.
        ("https://user:p@ss@host.com/x", "https://user:[REDACTED:url_password]@host.com/x"),
        ("password=pa$$w0rd x", "password=[REDACTED:config_secret] x"),
        ('{"password": "ab\\"cd ef"}', '{"password": "[REDACTED:config_secret]"}'),
        ('password: "it\'s a secret"', 'password: "[REDACTED:config_secret]"'),
        (
            "Server=db;Uid=sa;Pwd=letmein;Database=x",
            "Server=db;Uid=sa;Pwd=[REDACTED:config_secret];Database=x",
        ),
        ("Password=letmein;", "Password=[REDACTED:config_secret];"),
        # A connection string's line with a tool's output below it: Pwd= was kept.
        (
            "Server=tcp:db,1433;User Id=sa;Pwd=Cn0mdsNxblFASf4!;\nConnected.",
            "Server=tcp:db,1433;User Id=sa;Pwd=[REDACTED:config_secret];\nConnected.",
        ),
        ("Pwd=Cn0mdsNxblFASf4;\r\nok", "Pwd=[REDACTED:config_secret];\r\nok"),
        (
            "<server><password>letmein</password></server>",
            "<server><password>[REDACTED:config_secret]</password></server>",
        ),
        ("<ApiKey>abc123</ApiKey>", "<ApiKey>[REDACTED:config_secret]</ApiKey>"),
        (
            "x -----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK----- y",
            "x [REDACTED:private_key] y",
        ),
        # Missed before: curl's -b, a cookies dict, an XML value on its own line, .NET's
        # attributes the other way round, htpasswd, net use / net user, GitLab's other
        # prefixes, a query string's pwd, a password of digits after --password.
        ('curl -b "sid=abc123def; c=zz" x', 'curl -b "[REDACTED:cookie]" x'),
        (
            'requests.get(u, cookies={"sessionid": "abc123def456"})',
            "requests.get(u, cookies={[REDACTED:cookie]})",
        ),
        (
            "<password>\n    letmein\n</password>",
            "<password>\n    [REDACTED:config_secret]\n</password>",
        ),
        (
            '<add value="abc123" key="ApiKey" />',
            '<add value="[REDACTED:config_secret]" key="ApiKey" />',
        ),
        (
            "htpasswd -b /etc/nginx/.htpasswd admin S3cret!",
            "htpasswd -b /etc/nginx/.htpasswd admin [REDACTED:user_password]",
        ),
        (
            "htpasswd -nb admin hunter22 | tee f",
            "htpasswd -nb admin [REDACTED:user_password] | tee f",
        ),
        (
            "net use Z: \\\\srv\\share P@ssw0rd /user:bob",
            "net use Z: \\\\srv\\share [REDACTED:user_password] /user:bob",
        ),
        (
            "net use \\\\srv\\share /user:bob hunter22",
            "net use \\\\srv\\share /user:bob [REDACTED:user_password]",
        ),
        ("net user bob Passw0rd! /add", "net user bob [REDACTED:user_password] /add"),
        ("glcbt-64_abcdefghijklmnopqrstuv", "[REDACTED:gitlab_token]"),
        (
            "https://x/login?user=admin&pwd=letmein&x=1",
            "https://x/login?user=admin&pwd=[REDACTED:user_password]&x=1",
        ),
        ("tool --password 12345678 -h x", "tool --password [REDACTED:user_password] -h x"),
        # htpasswd's -C takes its cost (the user name was taken for the password);
        # unquoted, curl -b holds one pair (the shell ends the command at ";").
        (
            "htpasswd -b -B -C 10 .htpasswd alice Secr3t",
            "htpasswd -b -B -C 10 .htpasswd alice [REDACTED:user_password]",
        ),
        ("curl -b sid=xyz123; echo done", "curl -b [REDACTED:cookie]; echo done"),
        ("mysql --password=123456 db", "mysql --password=[REDACTED:user_password] db"),
        # Options glued to their value, six of them; NET in capitals; a plugin's secret.
        (
            "htpasswd -b -B -C 10 -c -m f u Secr3t; htpasswd -bBC10 f u Secr3t",
            "htpasswd -b -B -C 10 -c -m f u [REDACTED:user_password]; "
            "htpasswd -bBC10 f u [REDACTED:user_password]",
        ),
        (
            "NET use Z: \\\\srv\\share secret123",
            "NET use Z: \\\\srv\\share [REDACTED:user_password]",
        ),
        (
            '--plugin-secret datasette-auth0 client_id "n9eaHS0ckIsu"',
            '--plugin-secret datasette-auth0 client_id "[REDACTED:user_password]"',
        ),
        ("?user=a&pwd=letmein.", "?user=a&pwd=[REDACTED:user_password]."),
        # An Azure storage connection string's key (a QA run found it stored and printed).
        (
            "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey="
            + "Zm9vYmF5" * 11
            + "==;EndpointSuffix=core.windows.net",
            "DefaultEndpointsProtocol=https;AccountName=acmeprod;"
            "AccountKey=[REDACTED:azure_key];EndpointSuffix=core.windows.net",
        ),
        # A token is 34 letters (an identifier of 34 before an attribute is no token).
        (
            "HF token hf_" + "aBcDeFgHiJkLmNoPq" * 2 + " stored",
            "HF token [REDACTED:huggingface_token] stored",
        ),
        # A key URL-encoded in a connection string, and one starting with "/".
        (
            "AccountName%3Dx%3BAccountKey%3D"
            + _AZURE.replace("/", "%2F").replace("=", "%3D")
            + "%3BE",
            "AccountName%3Dx%3BAccountKey%3D[REDACTED:azure_key]%3BE",
        ),
        ("AccountKey=/" + _AZURE[1:] + ";", "AccountKey=[REDACTED:azure_key];"),
        # Names of the key in env files and ARM/Bicep; an HF token before a method call.
        ("STORAGE_ACCOUNT_KEY=" + _AZURE, "STORAGE_ACCOUNT_KEY=[REDACTED:azure_key]"),
        ('"storageAccountKey": "' + _AZURE + '"', '"storageAccountKey": "[REDACTED:azure_key]"'),
        (
            "t = hf_" + "iKZWeqhFWCEPyYngF" * 2 + ".strip()",
            "t = [REDACTED:huggingface_token].strip()",
        ),
        # An Azure key as the SDK, the az CLI, an environment and app.config give it.
        *(
            (f"{head}{_AZURE}{tail}", f"{head}[REDACTED:azure_key]{tail}")
            for head, tail in (
                ('credential={"account_name": "acct", "account_key": "', '"}'),
                ("az storage container create --account-key ", " -n logs"),
                ("AZURE_STORAGE_KEY=", ""),
                ('<add key="AccountKey" value="', '"/>'),
            )
        ),
        # A URL after -u keeps its host: only its password goes.
        (
            "redis-cli -u redis://:pw1234@cache.internal:6379 ping",
            "redis-cli -u redis://:[REDACTED:url_password]@cache.internal:6379 ping",
        ),
        # The short names, alone or as a name's last word (a QA run found them kept), and a
        # passphrase of words.
        *(
            (f"{head}{value}{tail}", f"{head}[REDACTED:config_secret]{tail}")
            for head, value, tail in (
                ('pwd = "', "Xk9mQ2vLp7", '"'),
                ('db.connect(user="a", pwd="', "Xk9mQ2vLp7", '")'),
                ("pass=", "Xk9mQ2vLp7", ""),
                ("PASS=", "Xk9mQ2vLp7", ""),
                ('db_pass = "', "hunter22", '"'),
                ("mysql_pwd: ", "s3cret!x", ""),
                ('dbPass: "', "hunter22", '"'),
                ('{"pass": "', "s3cret!!", '"}'),
                ('passphrase: "', "correct horse battery staple", '"'),
            )
        ),
    ],
)
def test_secrets_in_config_urls_and_json(text: str, expected: str) -> None:
    assert redact(text) == expected


ORDINARY_CODE = """
API_KEY = os.environ["API_KEY"]
MAX_TOKENS=4000
TOKEN_TTL=3600
token = get_token()
PASSWORD = None
SECRET=$SECRET
TOKEN=${TOKEN}
self.api_key = api_key
if TOKEN_LIMIT > 5:
    SECRET_KEY = settings.SECRET_KEY
const API_KEY = process.env.API_KEY;
from sklearn.model_selection import train_test_split  # sk-learn, skip-navigation
headers = {"Authorization": f"Bearer {token}"}
AKIA = "short"
def test_password_reset(client): ...
password = user_password
token = self.token
api_key=API_KEY
"max_tokens": 4000, "tokenizer": "cl100k_base", "password_hash": "pbkdf2sha256"
Token: see the docs. Secret: something to keep in mind.
Basic Authentication is enabled; see https://example.com:8080/path@section
Authorization: Basic Authentication is what the server asks for.
docker run -u 1000:1000 img; git push -u origin main; sudo -u postgres psql
PWD=/home/user/project and the token count is 512
DATABASE_URL=postgres://user:${DB_PASSWORD}@localhost/app
password = getpass.getpass()
docker run -p 8080:80 img; mkdir -p build; ssh -p 22 host; mysql -p
  --password TEXT  The password to use.   --token <token>   --api-key KEY
password: ********  api_key: sk-ant-...  token: "your-token-here"  secret: xxxxxxxx
vault_password: !vault |
"cookie": cookie_value, set_cookie: cookie_value, Cookie: see below
PWD=/home/user/x; ls
pwd=$(pwd);
password: "{{ db_password }}"  token: "<TOKEN>"
<token>{{ token }}</token> <password>$DB_PASSWORD</password>
--max-tokens 512 --password-stdin --bypass foo
  --password    Password to use   --with-token   Read token from stdin
--token string  --api-key string  --secret-key value  Use --token flag to pass
const pwd = process.cwd(); let pwd = path.resolve(__dirname);
const password = req.body.password; passwd = crypt(pw, salt);
password = hashlib.sha256(pw).hexdigest();
OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxx
sshpass -p "$PASS" ssh host; mysql -p"$PW" db; docker run -p 8080:80 img
<add key="Theme" value="dark" />
--password %DB_PASSWORD%  set DB_PASSWORD=%SECRET%  postgres://a:%PW%@host/db
export GOOGLE_API_KEY='... your key here ...'
dogsheep ALL = (root) NOPASSWD: /usr/bin/systemctl restart x
curl -b cookies.txt https://x; r = get(u, cookies={"a": token}); <add value="dark" key="Theme" />
htpasswd -c /etc/.htpasswd admin; run htpasswd -b to set it in batch mode
net use Z: \\\\srv\\share *; net user bob /delete; the net user command lists users
?pass=$PW; --max-token 409600; --password 1234
htpasswd -bc /etc/nginx/.htpasswd admin $PASSWORD; htpasswd -bBC 10 file user; --token=123456
net user bob 2>nul; net user %1 %2 /add; ?pass=false&x=1 /api?pwd=null ?pwd=/home/user
use ?pwd=true. or (?pass=false), ?pw=null; curl -b session=$SESSION_ID x
aws s3 ls s3://trail/AWSLogs/123456789012/CloudTrail/; the secretary wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
password=RANDOM_PASSWORD; Bearer MY-PERSONAL-ACCESS-TOKEN; docker build --secret id=npmrc,src=x .
--plugin-secret datasette-auth0 client_secret "$CLIENT_SECRET"
aws s3 ls; secret rotated at commit 3f786850e387550fdab836ed7e6dc881de23001b
hf_hub_download(repo_id="x"); the AccountKey field; SharedAccessKeyName=RootManageSharedAccessKey
const cfg = { accountName: name, accountKey: storageAccountKeyFromConfig };
AccountKey=getStorageAccountKeyFromKeyVaultOrEnvironment(); accountKey: /etc/secrets/accountkey
see SG.createSendGridClientForTheApp.sendTransactionalEmailNow()
model = hf_AutoModel.from_pretrained(x)
account_key: keys/storage2/primary_key_file_1; accountKey: storageAccountKeyFromConfig2
accountKey: /var/run/secrets/azure/storage2/eastus/accountkey
POSTGRES_PASSWORD_FILE=/run/secrets/postgres_password HF_TOKEN_PATH=/root/.cache/hf/token
OAUTH_TOKEN_URL=https://oauth2.googleapis.com/token GITHUB_TOKEN_PERMISSIONS=read-all
VAULT_SECRET_PATH=secret/data/myapp TOKEN_TYPE=Bearer TOKEN_URL = "/api/v1/auth/token"
apiKey: process.env.API_KEY!, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY, token: env.GH_TOKEN_V2,
"forgotPassword": "Forgot password?", "confirmPassword": "Confirm password", "password": "Mot de passe"
password: "Password must be at least 8 characters", errors.password = "Password is required";
docker exec -u www-data:www-data app php artisan migrate; docker run --rm -u root:root alpine sh
private_key: ~/.ssh/id_ed25519 "privateKey": "./keys/private.pem"
skopeo copy docker://alpine:3.19@sha256:c5b1261d6d3e43071626931fc004f70149baeba2c8ec672bd4f27761f8e1ad6b x
the machine password policy; by default password auth is off; an API key is required
the access token: see the docs; keytool -list -keystore x.jks; "auth": "c2VydmljZQ=="
first_pass = "optimize"; bypass = "abc123def"; compass: north-123; passenger: "bob12345"
OLDPWD=/x/y1 pass: true; passes = 3; pwd: ./build2; db_pass: ~/.pgpass1 PWD=/home/u1
"""


# Secrets a QA run found stored as written, each with the part that must go.
_FOUND = "Xk9mQ2vLp7wR"
_JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"
_PEM64 = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2UUlCQURBTkJna3Foa2lHOXcwQkFRRUZBQVND"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # After a JSON escape (a tool's input is stored as JSON text).
        (r'{"content":"github:\nghp_QAleakAbCdEfGhIjKlMnOpQrStUvWxYz0123\n"}', "ghp_QAleak"),
        (r'{"content":"DB_HOST=db\nPOSTGRES_PASSWORD=qaletterspassword\n"}', "qaletters"),
        (r"a\tsk-proj-abcdefghijklmnopqrstuvwxyz12", "sk-proj-abc"),
        # Said in words; digits first, then a symbol.
        ("my API key is 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a"),
        (f"Use this access token: {_FOUND}Ab3dEf6h", _FOUND),
        ('"password": "2024-Summer!"', "2024-Summer"),
        ("DB_PASSWORD=123-abc-XYZ", "123-abc-XYZ"),
        ("refresh_token: '1//0gAbCdEfGhIjKlMnOp-L9IrAbCdEfGhIjKlMnOp'", "0gAbCdEf"),
        # JSON Web Tokens with no scheme or name around them.
        (f"Authorization: {_JWT}", _JWT),
        (f"The JWT is {_JWT}", _JWT),
        # Command lines and files that hold a password.
        (f"redis-cli -a {_FOUND} ping", _FOUND),
        (f'CONFIG SET requirepass "{_FOUND}"', _FOUND),
        (f"127.0.0.1:6379> AUTH {_FOUND}", _FOUND),
        ("machine x login y password hunter22", "hunter22"),
        (f"sqlcmd -S localhost -U sa -P '{_FOUND}'", _FOUND),
        (f"mongodump -u admin -p {_FOUND}", _FOUND),
        (f"oc login -u developer -p {_FOUND}", _FOUND),
        (f"ldapsearch -x -D cn=admin -w {_FOUND}", _FOUND),
        (f"smbclient //srv/share -U alice%{_FOUND}", _FOUND),
        (f"keytool -importkeystore -srcstorepass {_FOUND}", _FOUND),
        (f"az keyvault secret set --vault-name kv --name db-pw --value {_FOUND}", _FOUND),
        (f'gh secret set API_KEY --body "{_FOUND}"', _FOUND),
        (f"aws secretsmanager create-secret --name prod/db --secret-string {_FOUND}", _FOUND),
        (f'dotnet user-secrets set "Jwt:Key" "{_FOUND}Ab3d"', _FOUND),
        (f'$pw = ConvertTo-SecureString "{_FOUND}" -AsPlainText -Force', _FOUND),
        # Credentials in base64: a PEM key, a registry's user:password.
        (f"  tls.key: {_PEM64}", _PEM64),
        ('{"auths":{"ghcr.io":{"auth":"b2N0b2NhdDpnaHBfYWJjZGVmZ2hpams="}}}', "b2N0b2Nh"),
        ("//registry.npmjs.org/:_auth=dXNlcjpYazltUTJ2THA3d1I=", "dXNlcjpY"),
        # Tokens a prefix names.
        ("dop_v1_" + "a1b2c3d4" * 8, "a1b2c3d4a1b2"),
        ("lin_api_" + "aB3dE" * 8, "aB3dEaB3dE"),
        ("pypi-AgEIcHlwaS5vcmc" + "CJGFiY2RlZmdo" * 5, "CJGFiY2Rl"),
        ("gsk_" + "Qw3rTy7u" * 6, "Qw3rTy7uQw3r"),
        ("Authorization: Bot MTA5ODc2NTQzMjEwOTg3NjU0.GhIjKl.abcdefghijklmnopqrstu", "MTA5ODc2"),
        ("xapp-1-A0123ABCD-1234567890-abcdef0123456789", "abcdef0123456789"),
    ],
)
def test_secrets_a_qa_run_found_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and "[REDACTED:" in out, out


# A review of the rules above found these kept.
_RSA64 = "\n".join(
    ["LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBMEZ1cHlKc0xOM0ZpVXdK"]
    + [
        f"V2Z4Q3pBa2xGa0FqRk9zZz{i:02d}QmxvY2tPZktleU1hdGVyaWFsSGVyZVRoYXRJc0xvbmdFbm91Z2g"
        for i in range(8)
    ]
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("password=Spring.Time2024!", "Spring.Time"),
        ("DB_PASSWORD=Correct.Horse9", "Correct.Horse"),
        ("mysql_pwd: Gr8.Pwd99", "Gr8.Pwd"),
        # Random keys hold words by chance ("pymp"): not identifiers.
        ("my API key is xUZp3MPJpymPXy7gl3q2gskJ2iKV3DAy", "xUZp3MPJ"),
        ("the password xUZp3MPJpymPXy7gl3q2gskJ2iKV3DAy was exposed", "xUZp3MPJ"),
        # A base64 key as `base64` wraps it, raw and in JSON text.
        (f"  tls.key: {_RSA64}", "T2ZLZXlNYXRlcmlhbEhl"),
        (json.dumps({"content": _RSA64}), "T2ZLZXlNYXRlcmlhbEhl"),
        # Every password of one command; Redis 6's AUTH user password; close variants.
        ("keytool -genkeypair -storepass A1b2c3d4e5 -keypass F6g7h8i9j0", "F6g7h8i9j0"),
        ("keytool -genkeypair -storepass A1b2c3d4e5 -keypass F6g7h8i9j0", "A1b2c3d4e5"),
        (f"127.0.0.1:6379> AUTH default {_FOUND}", _FOUND),
        (f"127.0.0.1:6379> auth {_FOUND}", _FOUND),
        (f"smbclient //srv/share -U 'bob%{_FOUND}'", _FOUND),
        (f"rpcclient -U bob%{_FOUND} host", _FOUND),
        (f"sqlcmd -S h -P{_FOUND}", _FOUND),
        (f"ldapsearch -x -w{_FOUND}", _FOUND),
        (f"redis-cli -a{_FOUND}", _FOUND),
        (f"ConvertTo-SecureString -AsPlainText -Force -String '{_FOUND}'", _FOUND),
        (f"ConvertTo-SecureString -AsPlainText '{_FOUND}' -Force", _FOUND),
        (f'{{"c": "machine h login u password \\"{_FOUND}\\""}}', _FOUND),
    ],
)
def test_secrets_a_review_found_kept_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and "[REDACTED:" in out, out


def test_code_references_and_identifiers_stay() -> None:
    for text in (
        "apiKey: process.env.API_KEY!,",
        "token: env.GH_TOKEN_V2,",
        "secret: settings.secret_key",
        "the password PBKDF2WithHmacSHA256 is used",
        "keytool -storepass:env PASSVAR -list",
    ):
        assert redact(text) == text


def test_runs_of_trigger_words_stay_linear() -> None:
    # Each took seconds per 80 KB (the square of the length) before its look was bounded.
    for unit in ("pass:", "db_pwd:", "passphrase:", "secret:", "eyJ-", "eyJaaaaaaaaa-"):
        text = unit * (400_000 // len(unit))
        assert redact(text) == text


def test_a_redaction_inside_json_text_keeps_its_escapes() -> None:
    # The value ended past a backslash: the escaped quote (or line break) after it went too.
    text = '{"content": "the password is Xk9#mQ2v\\" and\\nmachine h login u password Zq9Xk9mQ\\n"}'
    out = redact(text)
    assert "Xk9#mQ2v" not in out and "Zq9Xk9mQ" not in out
    assert json.loads(out)["content"].endswith("password [REDACTED:user_password]\n")


def test_no_false_positives_on_ordinary_code() -> None:
    assert redact(ORDINARY_CODE) == ORDINARY_CODE


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name[:40])
def test_real_sessions_are_mostly_untouched(path: Path) -> None:
    """The fixtures hold no real secret; only .env-example lines may be matched."""
    for event in parse_file(path).events:
        _, counts = redact_counts(event.text)
        assert set(counts) <= {"env_secret"}


def test_planted_secrets_never_survive_parsing_plus_redaction(tmp_path: Path) -> None:
    planted = plant_secrets(REAL_CLAUDE, tmp_path / "planted.jsonl")
    events = parse_file(planted).events
    joined = "\n".join(e.text for e in events)
    assert all(v in joined for v in secret_values())  # planted for real
    cleaned = "\n".join(redact(e.text) for e in events)
    for value in secret_values():
        assert value not in cleaned


def test_type_errors() -> None:
    with pytest.raises(TypeError):
        redact(None)  # type: ignore[arg-type]


def test_every_kind_has_a_shape() -> None:
    assert set(_SHAPES) == set(SECRET_KINDS)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_every_secret_is_found_through_its_trigger(data: st.DataObject) -> None:
    # A kind runs only where its trigger is: whatever its pattern matches, in any text
    # around it, must be redacted.
    kind = data.draw(st.sampled_from(sorted(_SHAPES)))
    secret = data.draw(st.from_regex(_SHAPES[kind], fullmatch=True))
    before = data.draw(st.sampled_from(["", "x ", "line one\n", '{"k": ']))
    after = data.draw(st.sampled_from(["", " y", "\nnext line", ",\n"]))
    text, counts = redact_counts(before + secret + after)
    assert counts, (kind, secret)
    assert "[REDACTED:" in text


def test_a_secret_glued_after_another_is_redacted() -> None:
    # AKIA… after a Google key is no word until the key before it is a placeholder: one
    # pass left it in the text (the property test below found it).
    text = "AIza" + "0" * 35 + "AKIA" + "0" * 16
    out, counts = redact_counts(text)
    assert out == "[REDACTED:google_api_key][REDACTED:aws_access_key]"
    assert counts == {"google_api_key": 1, "aws_access_key": 1}
    # A chain of glued secrets takes a pass each (four passes left the last two).
    chain = ("AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW" * 6, "keys ")
    out = redact(chain[1] + chain[0])
    assert out == "keys " + "[REDACTED:google_api_key]" * 6 and redact(out) == out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_redaction_leaves_its_own_output_as_it_is(data: st.DataObject) -> None:
    # A transcript read again takes the stored text of an unchanged event without
    # redacting it again (sessions.steps.normalize_events): that holds only if a second
    # pass would change nothing.
    pieces = data.draw(
        st.lists(
            st.one_of(
                st.sampled_from(sorted(_SHAPES)).flatmap(
                    lambda kind: st.from_regex(_SHAPES[kind], fullmatch=True)
                ),
                st.sampled_from(["", " ", "\n", '{"k": "', '", ', "export ", "password: "]),
            ),
            min_size=1,
            max_size=6,
        )
    )
    once = redact("".join(pieces))
    assert redact(once) == once


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name[:40])
def test_redacting_a_real_session_twice_changes_nothing_more(path: Path) -> None:
    for event in parse_file(path).events:
        once = redact(event.text)
        assert redact(once) == once


def test_redacting_planted_secrets_twice_changes_nothing_more(tmp_path: Path) -> None:
    events = parse_file(plant_secrets(REAL_CLAUDE, tmp_path / "planted.jsonl")).events
    for event in events:
        once = redact(event.text)
        assert redact(once) == once
    assert sum("[REDACTED:" in redact(e.text) for e in events) >= len(PLANTED)


def test_text_without_a_trigger_is_returned_as_is() -> None:
    text = "def f(x):\n    return x + 1  # sk_live is not a trigger; max_tokens: 512\n"
    assert redact(text) is text
    assert redact_counts(text) == (text, {})


def test_a_run_of_cookie_headers_without_a_value_is_left_as_it_is() -> None:
    # Each "cookie:" was scanned to the end of the run for a "=" (1 MB took minutes; see
    # the redaction figures in docs/benchmarks.md): a cookie's name stops at a separator.
    for text in ("cookie:" * 5_000, "set-cookie:b," * 3_000, "Cookie: a:b=c"):
        assert redact(text) == text


def test_a_scheme_is_looked_for_over_a_few_characters_only() -> None:
    # The URL rule's scheme was scanned from every word of a long "a-a-a…" run before a
    # "://" (1 MB: 548 s); a scheme is short. The password of a real URL is still found.
    text = "a-" * 20_000 + "://x"
    assert redact(text) == text
    assert redact("x " + text + " postgres://u:pw1x@h/d") == "x " + text + (
        " postgres://u:[REDACTED:url_password]@h/d"
    )


def test_a_long_run_of_name_characters_is_left_as_it_is() -> None:
    # "tokentoken…" (minified code, a log) was scanned back from every hit, 40 KB in 7.6 s
    # (quadratic); a name is looked at over 64 characters at most now. No name here is a
    # secret's: the text stays.
    for text in ("token" * 8000, "token_" * 8000 + "\n", "PASSWORD" * 8000 + "=x"):
        assert redact(text) == text
    # A run of options after htpasswd was tried every way (20,000 options: 30 s).
    text = "htpasswd " + "-b " * 20_000
    assert redact(text) == text


def test_a_password_said_in_words_is_redacted_and_prose_about_passwords_is_not() -> None:
    # A prompt saying "my admin password is MyDogRex2019Secret" was stored and shown in
    # clear: only assignments and flags were read.
    said = {
        "my admin password is MyDogRex2019Secret": "my admin password is ",
        "the password for the NAS box was Qw3rty!x, keep it": "the password for the NAS box was ",
        'the passphrase is "correct horse battery"': 'the passphrase is "',
        "Password is: MyDogRex2019Secret": "Password is: ",
        "my password's MyDogRex2019Secret": "my password's ",
        "the password for db01.prod is Xk9#mQ2!vL": "the password for db01.prod is ",
        "the password you need is Hunter2024x": "the password you need is ",
        "the password we use for staging was Stag1ng#": "the password we use for staging was ",
        "the password we agreed on is Banana42": "the password we agreed on is ",
        "the password I gave you is Winter2024x": "the password I gave you is ",
        "the password they sent over was 7Kx!pQ2z": "the password they sent over was ",
        # An agent repeating a value it found, with no verb between (it was kept).
        "Also the password PgKtjz4IJWUaxP9x is exposed.": "Also the password ",
        "the password `PgKtjz4IJWUaxP9x` leaked": "the password `",
    }
    for text, head in said.items():
        assert redact(text).startswith(head + "[REDACTED:user_password]"), text
    for prose in (
        "the password is stored in the vault",
        "is the password is correct?",
        "the password is at least 8 characters",
        "Password is 12345678 digits long?",
        "the password is $DB_PASS",
        "the password is <your-password>",
        # How a password is kept, in a session about auth.
        "the password is SHA-256 hashed",
        "the password is base64-encoded",
        "the password is argon2id",
        "the password is AES-256 encrypted at rest",
        "the password is 2FA-protected",
        "the password is 1Password-managed",
        "the password is bcrypt2 based",
        "the password you need is in the vault",
        "the password field is required",
        "password argon2id hashing",
        "the password OAuth2 flow",
        "hash the password SHA256 first",
        "PWD=/home/x; ls\nok",
        # Identifiers after the word: a run of their letters reads as a word.
        "hash the password PBKDF2WithHmacSHA256 now",
        "password OAuth2Client",
        "password IPv6Address",
        "the password Policy2024 requires 12 chars",
        "user password SHA256withRSA signature",
        "Call password resetPassword1() when done",
        "password Reset2FA flow",
        "passwd x86_64Linux",
        # A line of `env`'s output or a form's label: no connection string.
        "a\nPWD=work\n",
        "$ env\nPWD=C:\\work\n",
        "a\nPassword=Required\n",
    ):
        assert "REDACTED" not in redact(prose), prose
    # A long run of the words stays linear.
    assert redact("password for " * 30_000) == "password for " * 30_000


def _b64url(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def test_second_review_leaks_are_closed() -> None:
    import base64

    # A base64 key without padding took the next line's name, and its secret stayed.
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Fup" + "A" * 202
    key = base64.b64encode((pem + "\n-----END RSA PRIVATE KEY-----\n").encode()).decode()
    assert not key.endswith("=")
    assert redact(f"tls.key: {key}\npassword: Hunter22!\n") == (
        "tls.key: [REDACTED:private_key]\npassword: [REDACTED:config_secret]\n"
    )
    assert redact(f"tls.key: {key}\nkind: Secret\n").endswith("]\nkind: Secret\n")
    wrapped = "\n".join(key[i : i + 76] for i in range(0, len(key), 76))
    assert redact(f"key: |\n{wrapped}\nkind: Secret\n") == (
        "key: |\n[REDACTED:private_key]\nkind: Secret\n"
    )
    # A key after a certificate in one base64 value (a combined PEM).
    both = "-----BEGIN CERTIFICATE-----\n" + "MIIB" * 300 + "\n-----END CERTIFICATE-----\n"
    both += "-----BEGIN PRIVATE KEY-----\nMIIE" + "Q" * 100 + "\n-----END PRIVATE KEY-----\n"
    assert redact("tls.crt: " + base64.b64encode(both.encode()).decode()) == (
        "tls.crt: [REDACTED:private_key]"
    )
    # A value longer than 256 characters went whole, or left its tail.
    assert redact("apiKey=" + "aB3" * 100) == "apiKey=[REDACTED:config_secret]"
    assert redact("private_key: " + "aB3+" * 75 + " end") == (
        "private_key: [REDACTED:config_secret] end"
    )
    # A JWT whose header carries a certificate chain (over 512 characters).
    header = _b64url(b'{"alg":"RS256","x5c":["' + b"A" * 600 + b'"]}')
    claims = _b64url(b'{"sub":"12345678"}')
    token = f"{header}.{claims}.{_b64url(bytes(range(32)))}"
    assert redact(f"t {token} end") == "t [REDACTED:jwt] end"
    # Samba: a domain user, the user joined to -U, smbmap's -p; PowerShell unquoted.
    for text, kept in (
        ("smbclient //s/x -U 'CORP\\bob%S3cret!x'", "smbclient //s/x -U 'CORP\\bob%"),
        ("smbclient -L h -Ubob%S3cretpw", "smbclient -L h -Ubob%"),
        ("smbmap -H h -u bob -p S3cretpw", "smbmap -H h -u bob -p "),
        ("ConvertTo-SecureString -String S3cretpw -AsPlainText", "ConvertTo-SecureString -String "),
    ):
        assert redact(text).startswith(kept + "[REDACTED:user_password]"), text
    # Dotted passwords that read as a constant's name; code that reads as a password.
    for text in ("password=Acme.PROD2024", "password: Hunter.X99", "password: spring.time2024"):
        assert redact(text).endswith("[REDACTED:config_secret]"), text
    for text in (
        "token: oauth2.access_token",
        "secret: settings.S3_KEY",
        "keytool -storepass:env  PASSVAR -keypass:file\t/run/k",
        "ConvertTo-SecureString -String $pw -AsPlainText",
    ):
        assert redact(text) == text, text


def test_a_joined_flag_is_the_tools_own() -> None:
    # Another command's joined flag later on the line was taken for the password.
    for text in (
        "I ran redis-cli to flush, then ls -al /var/lib/redis",
        "sqlcmd -S db -Q 'select 1' then mvn -Pintegration verify",
    ):
        assert redact(text) == text
    assert redact("redis-cli -aS3cret9 ping") == "redis-cli -a[REDACTED:user_password] ping"
    assert redact("sqlcmd -S db -PHunter22!") == "sqlcmd -S db -P[REDACTED:user_password]"


def test_long_runs_of_the_new_shapes_stay_linear() -> None:
    # Seconds each if a failed match rescanned the run from every start in it.
    wrapped = "LS0tLS1CRUdJTi" + "A" * 60 + ("\n" + "A" * 76) * 4000
    _, counts = redact_counts(("password=" + "a1" * 200 + "(") * 200)
    assert counts == {"config_secret": 200}
    assert redact("apiKey=" * 40_000).count("[REDACTED") <= 1
    assert redact("eyJ" + "a" * 400_000) == "eyJ" + "a" * 400_000  # no claims, no token
    assert redact(("eyJ" + "a" * 20 + ".") * 30_000).count("[REDACTED:jwt]") == 10_000
    assert redact(wrapped + "\n!") == wrapped + "\n!"  # decodes to no private key


def test_oracle_curl_joined_mailchimp_and_terraform_secrets_go() -> None:
    for text, kept in (
        ("jdbc:oracle:thin:scott/Tiger123@//db:1521/svc", "jdbc:oracle:thin:scott/"),
        ("sqlplus scott/tiger@orcl", "sqlplus scott/"),
        ("sqlplus -s system/Manager1", "sqlplus -s system/"),
        ("curl -ubob:S3cretpw https://x", "curl -ubob:"),
        ("docker run img curl -u bob:S3cretpw http://x", "docker run img curl -u bob:"),
    ):
        assert redact(text).startswith(kept + "[REDACTED:user_password]"), text
    assert redact("key 0123456789abcdef0123456789abcdef-us21") == "key [REDACTED:service_token]"
    terraform = 'variable "db_password" {\n  type    = string\n  default = "S3cret!pw"\n}'
    assert redact(terraform) == terraform.replace("S3cret!pw", "[REDACTED:config_secret]")


def test_settings_and_user_groups_are_not_secrets() -> None:
    for text in (
        '"token": "cl100k_base"',
        "encoding: token=o200k_base",
        'first_pass = "optimize-1"',
        'render_pass: "shadow-2"',
        "docker exec -u app:staff web sh",
        "sudo -u deploy:deployers ls",
        "Set-Cookie: theme=dark; Path=/",
        "Cookie: lang=en-US; theme=light",
        'variable "region" {\n  default = "us-east-1"\n}',
    ):
        assert redact(text) == text, text
    assert redact("db_pass = 'Xk9mQ2vLp7'") == "db_pass = '[REDACTED:config_secret]'"
    assert redact("Set-Cookie: sessionid=8f3k2j9dk2l3k4j5h6g7; HttpOnly") == (
        "Set-Cookie: [REDACTED:cookie]"
    )


def test_third_review_leaks_are_closed() -> None:
    # Dotted values ending in a word and a digit were taken for code references; a value
    # joined to the tool's own flag needed a digit.
    for text in (
        "DB_PASSWORD=correct.horse1",
        "MYSQL_PASSWORD=mysql.root1",
        "PGPASSWORD=my_pass.word_123",
        "secret=foo.bar_baz9",
        "password: qwerty.asdf1",
        "password: form.password1",
        "redis-cli -afoobared ping",
        "sqlcmd -S db -U sa -PSecretpassword",
        "ldapsearch -x -D cn=admin -wadminpassword -b dc=x",
    ):
        assert redact(text) != text, text
    for text in (
        "I ran redis-cli then ls -al",
        "$pw = ConvertTo-SecureString -String (Get-Content pw.txt) -AsPlainText -Force",
    ):
        assert redact(text) == text, text


def test_fourth_review_leaks_are_closed() -> None:
    # A "user" command word inside a URL or a file name kept curl's password; a command
    # before curl kept the joined form's; Terraform escaped or with a block first; a
    # joined value after a bind DN's commas; a session cookie of one word; quoted Oracle.
    for text in (
        "curl -X POST http://jenkins:8080/job/docker-build/build -u admin:11a2b3c4d5e6f7",
        "curl -s http://localhost:9200/_cat/ps -u elastic:S3cretpw",
        "curl -F file=@crontab.txt -u admin:S3cretpw https://x",
        "sudo curl -ubob:hunter2pw https://x",
        "docker exec app curl -ubob:hunter2pw http://localhost",
        '{"content": "variable \\"db_password\\" {\\n  default = \\"Sup3rS3cret\\"\\n}"}',
        'variable "db_password" {\n  validation {\n    condition = true\n  }\n'
        '  default = "Sup3rS3cret"\n}',
        "ldapsearch -x -D cn=admin,dc=example,dc=com -wadminpass -b dc=example,dc=com",
        'ldapsearch -x -D "cn=admin,dc=example,dc=com" -wHunterpass',
        "Cookie: session=keyboardcat",
        "Set-Cookie: token=Rosebudxyz; Path=/; HttpOnly",
        "Cookie: lang=en; PHPSESSID=q0p9o8i7u6y5t4r3e2w1",
        'sqlplus system/"Pa$$w0rd"@orcl',
    ):
        out = redact(text)
        assert "[REDACTED:" in out, text
    for text in (
        'variable "secret_name" {\n  default = "prod/db-creds"\n}',
        'variable "token_ttl" {\n  default = "3600s"\n}',
        "docker exec -u app:staff web sh",
        "python -u app:main",
        "sort -u foo:bar",
        "sqlcmd -S db -Q 'select 1' then mvn -Pintegration verify",
        "Set-Cookie: theme=dark; Path=/",
    ):
        assert redact(text) == text, text


def test_fifth_review_leaks_and_false_positives() -> None:
    for text in (
        '{"command": "cd /app && git pull\\ncurl -u admin:S3cretpw9 https://x"}',
        "sudo /usr/bin/curl -u admin:S3cretpw9 https://x",
        "docker run --rm curlimages/curl -u admin:S3cretpw9 https://x",
        "python upload.py --user admin:S3cretpw9",
        'variable "jwt_secret_key" {\n  default = "k3j4h5g6j7k8l9"\n}',
        '{"command": "sqlplus system/\\"Pa$$w0rd\\"@orcl"}',
        "sqlplus system/'Pa$$w0rd'@orcl",
    ):
        assert "[REDACTED:" in redact(text), text
    for text in (
        "docker-compose exec -u app:staff web sh",
        "python -u app:main",
        "Cookie: sidebar_state=expanded; theme=dark",
        '{"cmd": "sqlcmd -S db -Q \\"select 1\\"", "notes": "use -Production profile"}',
    ):
        assert redact(text) == text, text


def test_terraform_default_past_an_escaped_quote_and_blocks_two_deep() -> None:
    escaped = 'variable "db_password" {\n  default = "Sup3r\\"S3cret"\n}'
    assert redact(escaped) == escaped.replace('Sup3r\\"S3cret', "[REDACTED:config_secret]")
    nested = (
        'variable "db_password" {\n  type = string\n  validation {\n'
        '    condition = can(regex("^.{12,}$", var.db_password))\n'
        '    error_message = "Too short."\n  }\n  default = "Sup3rS3cret9"\n}'
    )
    assert redact(nested) == nested.replace("Sup3rS3cret9", "[REDACTED:config_secret]")
    # Another variable's default after a secret one's block stays.
    two = 'variable "db_password" {\n  type = string\n}\nvariable "region" {\n  default = "eu-west-1a"\n}'
    assert redact(two) == two


def _json_command(command: str) -> str:
    """``command`` as a tool's input stores it (quotes escaped)."""
    return json.dumps({"command": command})


def _assert_hidden(commands: tuple[str, ...], *secrets: str) -> None:
    """Each of ``commands``, plain and as a tool's input, redacted of every one of
    ``secrets``."""
    for command in commands:
        for text in (command, _json_command(command)):
            out = redact(text)
            for secret in secrets:
                assert secret not in out, text


def _assert_kept(*texts: str) -> None:
    """Each of ``texts``, plain and as a tool's input, left as it is."""
    for text in texts:
        for each in (text, _json_command(text)):
            assert redact(each) == each, each


def test_sixth_review_leaks_are_closed() -> None:
    # Quotes escaped in a tool's input; a password joined to its flag in quotes; more
    # secret variable names; curl after a quoted argument naming a command, or named by
    # an image with a tag; httpie, curl's proxy user, lftp, Redis AUTH and REDISCLI_AUTH,
    # ldappasswd's new password; a quoted curl -u holding a space.
    _assert_hidden(
        (
            'curl -u "admin:S3cretPass" https://x',
            'curl --user "admin:S3cretPass" https://x',
            'sqlplus "scott/S3cretPass@orcl"',
            'sqlplus -S "scott/S3cretPass"@orcl',
            'curl -b "sessionid=Zx9k2LmQp7" https://x',
            'curl --cookie "sessionid=Zx9k2LmQp7" https://x',
            'sqlcmd -S . -U sa -P"Str0ng!Pass"',
            "redis-cli -a'Str0ngPass' ping",
        ),
        "S3cretPass",
        "Zx9k2LmQp7",
        "Str0ng",
    )
    for text in (
        'variable "db_pass" {\n  default = "AbCdEf123456"\n}',
        'variable "admin_pwd" {\n  default = "AbCdEf123456"\n}',
        'variable "storage_account_key" {\n  default = "AbCdEf123456"\n}',
        'curl -H "X-Cmd: ps aux" -u admin:AbCdEf123456 https://x',
        'curl -d "run python script" -u admin:AbCdEf123456 https://x',
        "docker run --rm curlimages/curl:8.5.0 -u admin:AbCdEf123456 https://x",
        "http -a admin:AbCdEf123456 example.org",
        "http --auth admin:AbCdEf123456 example.org",
        "xh -a admin:AbCdEf123456 example.org",
        "curl --proxy-user admin:AbCdEf123456 https://x",
        "curl -U admin:AbCdEf123456 https://x",
        "lftp -u admin,AbCdEf123456 ftp.example.org",
        "REDISCLI_AUTH=AbCdEf123456 redis-cli ping",
        "redis-cli -h cache AUTH AbCdEf123456",
        "redis-cli AUTH admin AbCdEf123456",
        "ldappasswd -x -D cn=admin -W -s AbCdEf123456 uid=bob",
        "curl -u 'admin:AbCdEf123456 Pass' https://x",
    ):
        out = redact(text)
        assert "AbCdEf123456" not in out, text


def test_sixth_review_false_positives_are_kept() -> None:
    for text in (
        "docker run --rm -v ./data:/var/lib/mysql -u app:docker mysql:8",
        "docker run -v pg:/var/lib/psql -u app:docker postgres",
        "docker run -w /src/svn -u app:staff builder",
        "Use redis-cli -a to pass the password",
        "bcp is installed, run mvn -Pintegration-tests",
        "curl -u ${TOKEN}:x-oauth-basic https://api.github.com",
        'variable "db_password" {\n  default = "REPLACE_ME"\n}',
        'variable "cache_token" {\n  default = "noop"\n}',
    ):
        assert redact(text) == text, text


def test_seventh_review_leaks_and_false_positives() -> None:
    # ldappasswd's new password beside its -w; a file or host name holding a prose word
    # between a tool and its flag; capital-letter Terraform defaults; a quoted image name;
    # curl -U quoted or joined, -sSu, a quoted password after the colon; REDISCLI_AUTH as
    # YAML, JSON and code.
    _assert_hidden(
        (
            "ldappasswd -x -D cn=admin -w Xq7pL9mZ2w -s N3wPa55w0rd uid=bob",
            "sqlcmd -S db -i run.sql -U sa -PN3wPa55w0rdXq7",
            "redis-cli -h cache.run.app -aN3wPa55w0rdXq7 ping",
            'variable "db_password" {\n  default = "SUPERSECRETPASSWORD"\n}',
            'docker run --rm "curlimages/curl:8.5.0" -u admin:Xq7pL9mZ2w https://x',
            "curl -U 'proxy:Xq7pL9mZ2w' https://x",
            "curl -Uproxy:Xq7pL9mZ2w https://x",
            "curl -sSu admin:Xq7pL9mZ2w https://x",
            "curl -u admin:'Xq7pL9mZ2w' https://x",
            "environment:\n  REDISCLI_AUTH: Xq7pL9mZ2w\n",
            "os.environ['REDISCLI_AUTH'] = 'Xq7pL9mZ2w'",
        ),
        "Xq7pL9mZ2w",
        "N3wPa55w0rd",
        "SUPERSECRET",
    )
    for text in (
        "I ran redis-cli but the auth token expired, so I rotated it",
        "Connect with redis-cli and auth with the password from vault",
        "redis-cli -n 2 DEL auth sessions",
        'variable "kms_encryption_key" {\n  default = "arn:aws:kms:us-east-1:1234:alias/app"\n}',
        'variable "client_key" {\n  default = "certs/client.key"\n}',
        'variable "health_check_pass" {\n  default = "healthy"\n}',
        'docker run -e "CMD=curl" -u app:staff img',
    ):
        assert redact(text) == text, text


def test_eighth_review_leaks_and_false_positives() -> None:
    # A health check or a package list naming curl in quotes made docker's -u curl's;
    # rsync -avu after a JSON line break was taken for curl's combined flags; prose and
    # RESP3 around Redis and ldappasswd; Terraform keeps narrowed to settings, paths and
    # ARNs; a quoted password holding a space.
    for text in (
        'docker run -d --health-cmd "curl -f http://localhost/ || exit 1" -u app:staff myimg',
        'docker run --rm -e "PKGS=git curl jq" -u builder:wheel img',
        json.dumps({"command": "curl -sO https://x/a.tgz\nrsync -avu deploy:/srv/app/ ./b"}),
        "Pass the new password with ldappasswd -s or -S to prompt.",
        'variable "tls_password" {\n  default = "/run/secrets/tls"\n}',
        'variable "db_password" {\n  default = "disabled"\n}',
    ):
        assert redact(text) == text, text
    _assert_hidden(
        (
            "redis-cli -3 AUTH s3cretpw99",
            'variable "db_password" {\n  default = "mysecretpassword"\n}',
            'variable "jwt_secret" { default = "x9Kd82/aZq+Lm0=" }',
            'variable "db_password" {\n  default = "arn:Sup3rS3cret!"\n}',
            "curl -s -u admin:'p@ss word!' https://x",
            'curl -sSu "admin:pa55word" https://x',
            "ldappasswd -x -D cn=admin -W -sN3wUserPw uid=bob",
        ),
        "s3cretpw99",
        "mysecretpassword",
        "x9Kd82",
        "Sup3r",
        "word!",
        "pa55word",
        "N3wUser",
    )


def test_environment_lists_dockerfile_env_and_exec_form_curl() -> None:
    # Kubernetes' env list, an ECS task's environment, a Dockerfile's ENV without "=",
    # curl in an exec-form list (a health check) and redis-cli's prompt on another db.
    _assert_hidden(
        (
            "env:\n  - name: DB_PASSWORD\n    value: S3cretPw1\n",
            'env:\n- name: API_TOKEN\n  value: "S3cretPw1abc"',
            '[{"name": "DB_PASSWORD", "value": "S3cretPw1"}]',
            "ENV DB_PASSWORD S3cretPw1",
            "FROM x\nENV DB_PASSWORD S3cretPw1\nRUN make",
            'test: ["CMD", "curl", "-f", "-u", "admin:S3cretPw1", "http://localhost"]',
            "127.0.0.1:6379[1]> AUTH S3cretPw1",
        ),
        "S3cretPw1",
    )
    _assert_kept(
        "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef: {name: db, key: pw}",
        "env:\n  - name: DB_PASSWORD_FILE\n    value: /run/secrets/db",
        "- name: GITHUB_TOKEN\n  value: ${{ secrets.GITHUB_TOKEN }}",
        "- name: TOKEN_TTL\n  value: 3600000",
        "ENV NODE_ENV production",
        'command: ["docker", "run", "-u", "app:staff", "img"]',
    )


def test_environment_lists_in_other_shapes_and_what_they_keep() -> None:
    _assert_hidden(
        (
            '{\n  "name": "DB_PASSWORD",\n  "value": "S3cretPw1!"\n}',
            'environment = [{ name = "DB_PASSWORD", value = "S3cretPw1!" }]',
            "Environment:\n  - Name: DB_PASSWORD\n    Value: S3cretPw1!\n",
            "  - name: DB_PASSWORD\r\n    value: S3cretPw1!\r\n",
        ),
        "S3cretPw1",
    )
    _assert_kept(
        '  - name: PASSWORD_HINT\n    value: "Must be at least 8 characters"\n',
        "ENV DB_PASSWORD should be passed at runtime\n",
        "mysql [2]> auth something\n",
        "  - name: TOKEN_MAX_AGE\n    value: 86400s\n",
        "  - name: DB_PASSWORD_SECRET_ARN\n    value: arn:aws:secretsmanager:us-east-1:1:secret:x\n",
    )


def test_the_false_positive_sweep_is_kept() -> None:
    # Another tool's combined flags after curl, "http" in prose, Redis keys and prose
    # after AUTH or requirepass, ldappasswd's flags named in prose, environment names
    # that only contain a secret word, Terraform expressions, placeholders with a verb.
    _assert_kept(
        "Unlike curl, rsync -avu host:/srv/data ./data keeps timestamps",
        "Serve it over http then rsync -a web01:/var/www/ ./www/",
        "After the http 200, docker cp -a app:/var/log/nginx ./nginx-logs",
        "redis-cli -c HGET auth ttl",
        "redis-cli -h redis-master -p 6379 auth && echo ok",
        "redis-cli -h redis auth is needed when requirepass is set",
        "ldappasswd -s, -S and -T are mutually exclusive",
        "ldappasswd supports -s (new password) and -w (bind password)",
        "- name: PASSWORD_HASHER\n  value: argon2id",
        '{"name": "SECRET_PROVIDER", "value": "aws-secrets-manager"}',
        '{\n  name  = "API_KEY"\n  value = random_password.api.result\n}',
        "ENV TOKEN_NAMESPACE kube-system",
        'variable "db_pwd" {\n  default = "PLEASE_SET"\n}',
    )
    _assert_hidden(
        (
            "curl -s -X POST https://x -fu admin:Xq7pL9mZ2w",
            'curl -H "Accept: x" -fu admin:Xq7pL9mZ2w https://x',
            "$ http --auth admin:Xq7pL9mZ2w GET example.org",
            "redis-cli -h h -p 6379 --no-auth-warning AUTH Xq7pL9mZ2w && echo ok",
            "ldappasswd -x -s Xq7pL9mZ2w uid=bob",
        ),
        "Xq7pL9mZ2w",
    )


def test_the_sweeps_review_leaks_are_closed() -> None:
    # The false-positive sweep's narrowing reopened these: SECRET_KEY and names with a
    # stage or version after the secret word in ENV and environment lists; an option's
    # value, a host:port or a variable between curl and its combined -sSu; httpie after
    # sudo, uv run, VAR=value, RUN or a prompt, a password opening with a slash; Redis
    # AUTH before a redirection or quoted; ldappasswd -s joined to a quoted value; a
    # Terraform default of words that only opens like a placeholder.
    _assert_hidden(
        (
            "ENV SECRET_KEY Xq7pL9mZ2w",
            "ENV DJANGO_SECRET_KEY Xq7pL9mZ2w",
            "ENV SECRET_KEY_BASE Xq7pL9mZ2w",
            "ENV DB_PASSWORD_PROD Xq7pL9mZ2w",
            "ENV API_KEY_V2 Xq7pL9mZ2w",
            "env:\n  - name: GITHUB_TOKEN_RO\n    value: Xq7pL9mZ2w",
            '"environment": [{"name": "DJANGO_SECRET_KEY", "value": "Xq7pL9mZ2w"}]',
            "curl -o out.json -sSu admin:Xq7pL9mZ2w https://x",
            "curl --max-time 10 -sSu admin:Xq7pL9mZ2w https://x",
            'curl -sS -o /dev/null -w "%{http_code}" -Lu admin:Xq7pL9mZ2w https://x',
            "curl localhost:8080/api -sSu admin:Xq7pL9mZ2w",
            "curl ${ES_URL}/_cat/indices -sSu admin:Xq7pL9mZ2w",
            "curl.exe -sSu admin:Xq7pL9mZ2w https://x",
            "sudo http -a admin:Xq7pL9mZ2w :8000/items",
            "watch -n 5 http -a admin:Xq7pL9mZ2w :8000/items",
            "uv run http -a admin:Xq7pL9mZ2w :8000/items",
            "HTTPIE_CONFIG_DIR=/tmp http -a admin:Xq7pL9mZ2w :8000/items",
            "RUN http -a admin:Xq7pL9mZ2w https://x",
            "- run: http -a admin:Xq7pL9mZ2w https://x",
            "> http -a admin:Xq7pL9mZ2w https://x",
            "redis-cli -h h -p 6379 AUTH Xq7pL9mZ2w > /dev/null",
            "redis-cli -h h -p 6379 AUTH admin Xq7pL9mZ2w < cmds.txt",
            "redis-cli -h 10.0.0.5 AUTH 'Xq7pL9mZ2w'",
            'redis-cli -h 10.0.0.5 AUTH "Xq7pL9mZ2w"',
            'ldappasswd -x -s"Xq7pL9mZ2w" uid=bob',
            "ldappasswd -x -s'Xq7pL9mZ2w' uid=bob",
            'variable "db_password" {\n  default = "Xq7pL9mZ2w_set_sail"\n}',
            'variable "db_password" {\n  default = "Enter_The_Xq7pL9mZ2w"\n}',
        ),
        "Xq7pL9mZ2w",
    )
    _assert_kept(
        "curl https://x;rsync -avu host:/data ./",
        "curl -o-|rsync -avu src:/dst .",
        "curl -o out.json https://x then rsync -avu host:/data",
        "ENV TOKEN_MAX_AGE 3600000",
        "ENV API_KEY_HEADER X-Api-Key",
        'variable "db_password" {\n  default = "Update_Me_Later"\n}',
    )


def test_the_widened_rules_keep_prose_lists_tags_and_placeholders() -> None:
    # The review of the rules above: a list of tools after curl, an arrow, rsync after
    # httpie on the next line of a tool's input, a Redis AUTH in prose or before a tag,
    # Terraform placeholders of more words, ldappasswd's -s before punctuation; and Redis
    # AUTH before a stream's redirection (2>) leaked, its password read as the user.
    _assert_kept(
        "curl -s, wget -q, rsync -avu host:/data",
        "curl https://api -> jq -> rsync -avu host:/data",
        "http :8000/items\nrsync -a backup@host:/srv/backup ./",
        "redis-cli AUTH failed, see #123",
        "The redis-cli AUTH command <b>must</b> come first",
        "redis-cli AUTH default <password>",
        'variable "db_password" {\n  type = string\n  default = "set_via_env"\n}',
        'variable "db_password" {\n  default = "replace_at_runtime"\n}',
        "ldappasswd -x -s_new uid=bob",
        "ENV SECRET_ROOT run/secrets",
    )
    _assert_hidden(
        (
            "redis-cli -h 10.0.0.5 AUTH Xq7pL9mZ2w 2> /dev/null",
            "redis-cli -h 10.0.0.5 AUTH Xq7pL9mZ2w 2>/dev/null",
        ),
        "Xq7pL9mZ2w",
    )
    # A curl -u with nothing after the colon at a JSON string's end stays valid JSON.
    text = json.dumps({"command": "curl -s https://x -o page.html -Su user:"})
    assert redact(text) == text


def test_the_last_reviews_curl_quotes_commas_and_setting_words() -> None:
    # A URL holding a list comma before -sSu, a quoted password never closed on its line
    # or opening with a brace or comma leaked; settings and placeholders as an env
    # list's or ENV's value (ENV USE_TOKEN_V2 enabled) were redacted.
    _assert_hidden(
        (
            "curl https://api.example.com/items?ids=1,2,3 -sSu admin:Xq7pL9mZ2w",
            "curl -d '{\"a\":1}' https://h/<id> -sSu admin:Xq7pL9mZ2w",
            "curl -u admin:'Xq7pL9mZ2w",
            "curl -u admin:'}Xq7pL9mZ2w' https://h",
            "curl -u admin:',Xq7pL9mZ2w' https://h",
        ),
        "Xq7pL9mZ2w",
    )
    _assert_kept(
        "ENV USE_TOKEN_V2 enabled",
        "ENV AUTH_TOKEN_LOCAL localhost",
        '- name: API_KEY_TEST\n  value: "disabled-in-ci"',
        "ENV SECRET_KEY_BASE placeholder",
    )


def test_a_password_opening_with_a_setting_word_and_more_placeholders() -> None:
    # A value opening with a setting word ("On#…", "No-Entry-…") was kept as that setting;
    # Terraform placeholders of other words (set_from_vault) were redacted.
    for command, secret in (
        ("ENV DB_PASSWORD On#Call2024!x", "Call2024"),
        ("ENV DB_PASSWORD No-Entry-2024!", "Entry-2024"),
        ('ENV DB_PASSWORD "Off.Grid#2024"', "Grid#2024"),
        ("ENV DB_PASSWORD changeme!Kq93xZ", "Kq93xZ"),
        ('- name: DB_PASSWORD\n  value: "On#Call2024!x"', "Call2024"),
        ('{"name": "API_TOKEN", "value": "Yes.Please.42xQ"}', "42xQ"),
    ):
        _assert_hidden((command,), secret)
    # JSON-escaped once (a transcript's line), as the review found it.
    escaped = '{\\"name\\": \\"DB_PASSWORD\\", \\"value\\": \\"Off#Grid2024\\"}'
    assert "Grid2024" not in redact(escaped)
    _assert_kept(
        "ENV DB_PASSWORD changeme",
        '{"name": "API_TOKEN", "value": "none"}',
        '{\\"name\\": \\"API_TOKEN\\", \\"value\\": \\"off\\"}',
        'variable "db_password" { default = "set_from_vault" }',
        'variable "db_password" { default = "change_me_please" }',
        'variable "api_token" { default = "SET_FROM_CI" }',
    )


def test_curl_combined_flags_after_a_query_string_and_redis_prose() -> None:
    # A URL's query joined by "&" stood between curl and its -sSu; "AUTH is required" and
    # sqlcmd's "1> " prompt read as a Redis password.
    _assert_hidden(
        (
            "curl https://x.io/a?b=1&c=2 -sSu admin:Xq7pL9mZ2w",
            "redis:6380[12]> auth Xq7pL9mZ2w",
            "127.0.0.1:6379> AUTH admin Xq7pL9mZ2w",
        ),
        "Xq7pL9mZ2w",
    )
    _assert_kept(
        "curl https://x.io/a && rsync -avu host:Xq7pL9mZ2w",
        "curl https://x.io/a & rsync -avu host:Xq7pL9mZ2w",
        "redis-cli AUTH is required > first",
        'redis-cli auth "is needed"',
        "1> auth users < users.csv",
    )


def test_stages_regions_master_keys_and_indented_env_lines() -> None:
    # A review's leaks: a stage or region after the secret word outside the short list
    # (_EU, _REPLICA, _CI, _PROD_RO, _V1000), SECRETKEY and RAILS_MASTER_KEY, an indented
    # ENV line or one ending in a comment or a continuation, an unquoted YAML key with a
    # stage (API_KEY_V2: …).
    _assert_hidden(
        (
            "ENV DB_PASSWORD_EU Xq7pL9mZ2w",
            "ENV DB_PASSWORD_REPLICA Xq7pL9mZ2w",
            "ENV API_TOKEN_CI Xq7pL9mZ2w",
            "ENV DB_PASSWORD_PROD_RO Xq7pL9mZ2w",
            "ENV API_KEY_V1000 Xq7pL9mZ2w",
            "ENV SECRETKEY Xq7pL9mZ2w",
            "ENV RAILS_MASTER_KEY Xq7pL9mZ2w",
            "  ENV DB_PASSWORD Xq7pL9mZ2w",
            "\tENV DB_PASSWORD Xq7pL9mZ2w",
            "FROM x\\n    ENV DB_PASSWORD Xq7pL9mZ2w\\nRUN make",
            "ENV DB_PASSWORD Xq7pL9mZ2w # prod",
            "ENV DB_PASSWORD Xq7pL9mZ2w \\\nENV B c",
            "- name: DB_PASSWORD_EU\n  value: Xq7pL9mZ2w",
            "API_KEY_V2: Xq7pL9mZ2w",
            "  db_password_prod: Xq7pL9mZ2w",
            "RAILS_MASTER_KEY=Xq7pL9mZ2w",
            "export ENCRYPTION_KEY=Xq7pL9mZ2w",
            "master_key: Xq7pL9mZ2w",
        ),
        "Xq7pL9mZ2w",
    )
    _assert_kept(
        "ENV TOKEN_NAMESPACE kube-system",
        "ENV PASSWORD_HASHER argon2id",
        "ENV DB_PASSWORD_FILE /run/secrets/db",
        "ENV DB_PASSWORD should be passed at runtime",
        "ENV API_TOKEN_URL https://x.example/t",
        "DB_PASSWORD_PROD: must be set in CI",
        "signing_key: /etc/ssl/k.pem",
        "encryption_key_id: abc123456",
        'first_pass_v2 = "optimize-1"',
    )


def test_archive_and_key_passphrases_and_vault_tokens() -> None:
    # Passphrases given on the command line to ssh-keygen, zip, unzip, openssl enc and
    # 7-Zip, and HashiCorp Vault tokens, were stored as written.
    _assert_hidden(
        (
            "ssh-keygen -t ed25519 -N Xq7pL9mZ2w -f key",
            "ssh-keygen -p -P old1 -N Xq7pL9mZ2w -f key",
            "zip -r -P Xq7pL9mZ2w backup.zip data/",
            "unzip -P Xq7pL9mZ2w backup.zip",
            "openssl enc -aes-256-cbc -k Xq7pL9mZ2w -in a -out b",
            "7z a -pXq7pL9mZ2w backup.7z data/",
            "7za x backup.7z -pXq7pL9mZ2w",
            "vault login hvs.Xq7pL9mZ2wCAESIJabcdefghijklmnop",
            "VAULT_TOKEN=hvb.Xq7pL9mZ2wAAAAAQabcdefghijklmnop vault kv get x",
        ),
        "Xq7pL9mZ2w",
    )
    _assert_kept(
        'ssh-keygen -t ed25519 -N "" -f key',
        "ssh-keygen -N $PASSPHRASE -f key",
        "use zip with -P to set a password",
        "gzip -P x1 file",
        "7z a -p backup.7z data/",
        "openssl rand -base64 32",
        "hvs.short",
    )


def test_a_pgpass_line_is_redacted_where_the_text_names_the_file() -> None:
    _assert_hidden(
        (
            'echo "db.example.com:5432:app:appuser:Xq7pL9mZ2w" >> ~/.pgpass',
            "cat > ~/.pgpass <<EOF\nlocalhost:5432:*:postgres:Xq7pL9mZ2w\nEOF",
            "~/.pgpass\\n10.0.0.5:*:*:postgres:Xq7pL9mZ2w",
        ),
        "Xq7pL9mZ2w",
    )
    _assert_kept(
        "localhost:5432:app:appuser:Xq7pL9mZ2w",  # no .pgpass named: five fields alone
        "chmod 600 ~/.pgpass at 12:30:45:00:done",
        "echo db:5432:app:bob:$PGPASSWORD >> ~/.pgpass",
    )


def test_a_secret_in_a_tool_inputs_escaped_json_is_redacted() -> None:
    # A tool's input is stored as compact JSON: a command's own escaped quotes (curl -d
    # "{\"password\": …}") are escaped twice there, and the rules read them escaped once.
    commands = (
        'curl -X POST http://localhost:8000/login -H "Content-Type: application/json" '
        '-d "{\\"username\\":\\"admin\\",\\"password\\":\\"Xq7pL9mZ2w\\"}"',
        'python -c "import json; print(json.dumps({\\"api_key\\": \\"Xq7pL9mZ2w\\"}))"',
    )
    for command in commands:
        assert "Xq7pL9mZ2w" not in redact(command)
        for text in (
            json.dumps({"command": command, "description": "log in"}, separators=(",", ":")),
            json.dumps({"command": ["bash", "-lc", command], "workdir": "/srv"}),
        ):
            redacted, counts = redact_counts(text)
            assert "Xq7pL9mZ2w" not in redacted and sum(counts.values()) == 1, redacted
            document = json.loads(redacted)  # still the same JSON document
            assert set(document) == set(json.loads(text))
    # Written otherwise (indented, or not JSON), a text is read as it is.
    plain = 'x = "{\\"name\\": \\"bob\\"}"'
    assert redact(plain) is plain
    pretty = json.dumps({"command": 'echo "{\\"name\\": \\"bob\\"}"'}, indent=2)
    assert redact(pretty) is pretty


def test_a_token_given_to_vault_login_is_redacted() -> None:
    # Legacy Vault tokens (s., b.) and a token read elsewhere carry no hvs. prefix.
    _assert_hidden(
        (
            "vault login s.Tq0DWHN8ZXdpL1wDvHdqFnJd",
            "VAULT_ADDR=https://v:8200 vault login -no-print s.Tq0DWHN8ZXdpL1wDvHdqFnJd",
            "vault login -address=https://v:8200 's.Tq0DWHN8ZXdpL1wDvHdqFnJd'",
        ),
        "Tq0DWHN8ZXdpL1wDvHdqFnJd",
    )
    _assert_hidden(("vault login 7fd1e3c2-51b3-4c3e-9f1a-5c1a8e0e1f2b",), "5c1a8e0e1f2b")
    _assert_kept(
        "vault login",
        "vault login -method=github",
        "vault login -method=userpass username=admin",
        "vault login -method=oidc role=dev2024reader",
        "vault login to the server with your token",
        "vault login using the root token",
        "vault login $VAULT_TOKEN",
        "vault login -",
    )


def test_redis_auth_echoed_and_httpie_run_otherwise_are_redacted() -> None:
    _assert_hidden(
        (
            'echo "AUTH Xq7pL9mZ2w" | redis-cli',
            "printf 'AUTH Xq7pL9mZ2w\\r\\nPING\\r\\n' | nc localhost 6379",
            'echo -e "AUTH default Xq7pL9mZ2w\\nPING" | redis-cli -h cache',
            "sudo -E http -a admin:Xq7pL9mZ2w example.org",
            "python -m httpie -a admin:Xq7pL9mZ2w example.org",
            "python3 -m httpie --auth admin:Xq7pL9mZ2w example.org",
        ),
        "Xq7pL9mZ2w",
    )
    _assert_kept(
        'echo "AUTH failed"',
        'echo "Auth is required"',
        'echo "AUTH $REDIS_PASSWORD" | redis-cli',
        "pip install httpie -a b:c",
        "sudo -E ls -a x:y",
    )


def test_a_value_glued_to_a_symbol_is_redacted_whole() -> None:
    # `cat .env` printed DB_PASSWORD=Kx7(mP2qLw9 and it was stored as written (the value
    # stopped at the bracket, three characters); Tr0ub4dor&3xyz kept its "&3xyz".
    _assert_hidden(
        (
            "DB_PASSWORD=Kx7(mP2qLw9\nREDIS_PASSWORD=Zq8[vN3tRe5\nSMTP_PASSWORD=Hj4&yU6iOp1",
            "export DB_PASSWORD=Kx7(mP2qLw9 && npm start",
        ),
        "Kx7",
        "mP2qLw9",
        "vN3tRe5",
        "yU6iOp1",
    )
    _assert_hidden(("DB_PASSWORD=Tr0ub4dor&3xyz", "password: Tr0ub4dor&3xyz"), "3xyz")
    _assert_hidden(("MYSQL_PWD=s3cr3t;rm -rf build",), "s3cr3t;rm")  # too much, not too little
    _assert_kept(
        "DB_PASSWORD=get_password()",
        "API_KEY=os.environ.get(name)",
        "SECRET_KEY=keys[0]",
        "DB_PASSWORD=$(cat /run/secrets/db)",
        "PASSWORD=x;echo hi",
    )
    # A query string's or a connection string's next field stays.
    assert redact("?api_key=abc123def456&x=1") == "?api_key=[REDACTED:config_secret]&x=1"
    assert redact("Pwd=letmein;Database=x") == "Pwd=[REDACTED:config_secret];Database=x"


def test_a_password_said_in_words_may_hold_an_opening_bracket() -> None:
    _assert_hidden(
        ("my password is Kx7(mP2qLw9", "the password you need is Zq8[vN3tRe5 ok"),
        "mP2qLw9",
        "vN3tRe5",
    )
    _assert_kept("the password is required(see docs)", "password is f(x1) here")


def test_curl_bare_hosts_user_agents_and_a_user_quoted_apart() -> None:
    # Leaks a review left: a bare host between curl and its -sSu, a user agent named
    # "docker" read as docker's -u user:group, the user and the password quoted apart.
    _assert_hidden(
        (
            "curl localhost -sSu admin:Xq7pL9mZ2w",
            "curl api.example.com/v1 -sSu admin:Xq7pL9mZ2w",
            "curl -A docker -u admin:Xq7pL9mZ2w https://x",
            "curl --user-agent docker -u admin:Xq7pL9mZ2w https://x",
            "curl -u 'admin':'Xq7pL9mZ2w' https://x",
            'curl --user "admin":"Xq7pL9mZ2w" https://x',
            'curl -u \\"admin\\":\\"Xq7pL9mZ2w\\" https://x',
        ),
        "Xq7pL9mZ2w",
    )
    _assert_kept(
        "curl it. then rsync -avu host:Xq7pL9mZ2w",
        'docker run -u "app":"staff" image',
        "sudo -A docker run -u app:Xq7pL9mZ2w image",
        "curl -u 'admin':'$PASSWORD' https://x",
        "http -a https://Xq7pL9mZ2w",
    )


def test_a_dotenv_value_with_spaces_is_redacted_whole() -> None:
    # `cat .env` showed PASSWORD=[REDACTED:env_secret] horse battery staple: three words
    # of four of the passphrase kept.
    dotenv = "DB_HOST=localhost\nDB_PASSWORD=correct horse battery staple\nDB_PORT=5432\n"
    assert redact(dotenv) == "DB_HOST=localhost\nDB_PASSWORD=[REDACTED:env_secret]\nDB_PORT=5432\n"
    assert (
        redact("PASSWORD=correct horse battery staple\nX=1")
        == "PASSWORD=[REDACTED:env_secret]\nX=1"
    )
    commented = "A=1\nPASSWORD=correct horse battery staple # the old one\nB=2"
    assert redact(commented) == "A=1\nPASSWORD=[REDACTED:env_secret] # the old one\nB=2"
    escaped = "A=1\\nexport API_TOKEN=staple horse battery correct\\nB=2"  # JSON text
    assert redact(escaped) == "A=1\\nexport API_TOKEN=[REDACTED:env_secret]\\nB=2"
    # A shell line: the words after the value are the command it runs.
    assert redact("API_KEY=abc123xyz npm start") == "API_KEY=[REDACTED:env_secret] npm start"
    shell = "cd app\nAPI_KEY=abc123xyz npm run dev -- --port 3000\n"
    assert redact(shell) == "cd app\nAPI_KEY=[REDACTED:env_secret] npm run dev -- --port 3000\n"
