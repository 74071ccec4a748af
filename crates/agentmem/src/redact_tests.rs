use super::*;

#[test]
fn redacts_every_kind_and_keeps_the_rest() {
    let text = "Use OPENAI key sk-proj-AbCdEf0123456789xyzXYZ and AKIAIOSFODNN7EXAMPLE; \
                token: ghp_0123456789abcdefghijklmnopqrstuvwxyz; Authorization: Bearer abc.def-ghi_jkl0123456789; \
                password=hunter2hunter2; mail ada@lovelace.org or call +44 20 7946 0958; \
                card 4111 1111 1111 1111. Build 1.2.3 ran 2026-11-22 in 12 ms on port 8080.";
    let (clean, found) = redact(text, RedactionPolicy::default());
    for secret in [
        "sk-proj", "AKIA", "ghp_", "abc.def", "hunter2", "ada@", "7946", "4111",
    ] {
        assert!(!clean.contains(secret), "{secret} survived: {clean}");
    }
    for kept in ["Build 1.2.3", "2026-11-22", "12 ms", "port 8080"] {
        assert!(clean.contains(kept), "{kept} was redacted: {clean}");
    }
    assert_eq!(
        found,
        Redacted {
            secrets: 5,
            emails: 1,
            phones: 1,
            cards: 1,
            ..Redacted::default()
        }
    );
}

#[test]
fn named_credentials_lose_their_value_and_keep_their_name() {
    let cases = [
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCY",
            "AWS_SECRET_ACCESS_KEY=[REDACTED:secret]",
        ),
        (
            r#"{"client_secret": "Gq7Wz2Lk9Xp4Rt6Y"}"#,
            r#"{"client_secret": "[REDACTED:secret]"}"#,
        ),
        (
            "postgres://admin:Tr0ub4dor-3@db.internal:5432/app",
            "postgres://admin:[REDACTED:secret]@db.internal:5432/app",
        ),
        (
            "curl -H 'Authorization: Basic YWRtaW46czNjcjN0'",
            "curl -H 'Authorization: Basic [REDACTED:secret]'",
        ),
        (
            "the admin password is correct-horse-9.",
            "the admin password is [REDACTED:secret].",
        ),
        (
            "it signs in with the password Tr0ub4dor-3x as root",
            "it signs in with the password [REDACTED:secret] as root",
        ),
        (
            "STRIPE=sk_live_51HqLkJ2eZvKYlo2C9mN8 HF=hf_QwErTyUiOpAsDfGhJkLzXcVbNm012345",
            "STRIPE=[REDACTED:secret] HF=[REDACTED:secret]",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nok",
            "[REDACTED:secret]\nok",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk…",
            "[REDACTED:secret]",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(
            redact(text, RedactionPolicy::default()).0,
            expected,
            "{text}"
        );
    }
}

#[test]
fn words_that_only_look_like_credentials_are_kept() {
    let text = "max_tokens: 4096000, primary_key=True, the password is incorrect, \
                password: string, secret: true, bypass = enabled_everywhere, \
                the password field is required, password reset sent, \
                basic configuration works, commit 3f9d2c1b7a5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c, \
                see https://docs.example.com:8443/api/v2, tokenizer: o200k_base";
    assert_eq!(redact(text, RedactionPolicy::default()).0, text);
}

#[test]
fn credentials_given_to_commands_headers_and_hooks_lose_their_value() {
    let cases = [
        (
            "curl -u deploy:Sup3rS3cret! https://api.example.com/v1",
            "curl -u deploy:[REDACTED:secret] https://api.example.com/v1",
        ),
        (
            "curl -s --user admin:hunter2 https://ci.internal",
            "curl -s --user admin:[REDACTED:secret] https://ci.internal",
        ),
        (
            "mysql -h db.internal -u root -pS3cr3tPass app",
            "mysql -h db.internal -u root -p[REDACTED:secret] app",
        ),
        (
            "mysqldump -u root -p'My Pass' app",
            "mysqldump -u root -p[REDACTED:secret] app",
        ),
        (
            "Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
            "Authorization: Token [REDACTED:secret]",
        ),
        (
            r#"{"Authorization": "token ghu_notAGithubShape_but_long_enough"}"#,
            r#"{"Authorization": "token [REDACTED:secret]"}"#,
        ),
        (
            "post to https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/AbCdEfGhIjKlMnOpQrStUvWx now",
            "post to https://hooks.slack.com/services/[REDACTED:secret] now",
        ),
        (
            "SENDGRID=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",
            "SENDGRID=[REDACTED:secret]",
        ),
        (
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=zHQR1xfxRXmyqhAPu7NPpZP+rtJySLdi46tYBfB2WiucHX4PN8RJIb0/ZWTq338UKnJmjEfiI9Fu3YxHtGr8Ww==;EndpointSuffix=core.windows.net",
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED:secret];EndpointSuffix=core.windows.net",
        ),
        (
            "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=c2VjcmV0LXNoYXJlZC1hY2Nlc3Mta2V5LXZhbHVlMTI=",
            "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=[REDACTED:secret]",
        ),
        (
            "the app's client secret u8j8Q~YgjmUh.Bel31iEl2hpChYgCfrL1spNxnyV expires",
            "the app's client secret [REDACTED:secret] expires",
        ),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF0Mfx0BCADF\n-----END PGP PRIVATE KEY BLOCK-----",
            "[REDACTED:secret]",
        ),
        (
            "AWS_SESSION=ASIAZ7Q3XWJ5KTPL4N2M",
            "AWS_SESSION=[REDACTED:secret]",
        ),
        (
            "twine upload -p pypi-AgEIcHlwaS5vcmcCJDk3ZjZhNmE1LWI0ZDMtNGQ0ZC05ZTc2LWZhN2Y3YjE2",
            "twine upload -p [REDACTED:secret]",
        ),
        (
            "doctl auth init -t dop_v1_4f1b8c3e6a9d2f5b7c4e1a6d3f8b0c5e2a7d4f1b8c3e6a9d2f5b7c4e1a6d3f8b",
            "doctl auth init -t [REDACTED:secret]",
        ),
        (
            "SHOPIFY 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 and DATABRICKS dapi0a1b2c3d4e5f60718293a4b5c6d7e8f9",
            "SHOPIFY [REDACTED:secret] and DATABRICKS [REDACTED:secret]",
        ),
        ("DB_PASS=s3cretive", "DB_PASS=[REDACTED:secret]"),
        ("password: hunter2", "password: [REDACTED:secret]"),
    ];
    for (text, expected) in cases {
        assert_eq!(
            redact(text, RedactionPolicy::default()).0,
            expected,
            "{text}"
        );
    }
}

#[test]
fn a_named_credential_is_found_whatever_quotes_stand_around_it() {
    let value = "hu9lEmJcADwyQNeLnpTq8Zx2";
    let names = [
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "client_secret",
        "clientSecret",
        "SecretAccessKey",
        "aws_secret_access_key",
        "AWS_SECRET_ACCESS_KEY",
        "api_key",
        "apikey",
        "x-api-key",
        "token",
        "access_token",
        "refresh_token",
        "GITHUB_TOKEN",
        "private_key",
        "PGPASSWORD",
        "DB_PASS",
        "credentials",
    ];
    let shapes = [
        "{\"NAME\": \"VALUE\"}",
        r#"{\"NAME\": \"VALUE\"}"#,
        r#"{\\\"NAME\\\":\\\"VALUE\\\"}"#,
        "{'NAME': 'VALUE'}",
        "NAME = \"VALUE\"",
        "NAME='VALUE'",
        "config:\n  NAME: VALUE\n",
        "NAME=VALUE",
        "--NAME=VALUE --host x",
        "'NAME' => 'VALUE'",
        "NAME := \"VALUE\"",
    ];
    for name in names {
        for shape in shapes {
            let text = shape.replace("NAME", name).replace("VALUE", value);
            let (clean, found) = redact(&text, RedactionPolicy::default());
            assert!(!clean.contains(value), "{text} -> {clean}");
            assert!(clean.contains(name), "the name is kept: {clean}");
            assert_eq!(found.secrets, 1, "{text} -> {clean}");
        }
    }
    // Letters only, as a key may be.
    assert_eq!(
        redact(
            r#"api_key = "lettersonlyLETTERSonly""#,
            RedactionPolicy::default()
        )
        .0,
        r#"api_key = "[REDACTED:secret]""#
    );
    // Values without a digit: a shell literal, a YAML password, a header
    // given as a setting's value.
    for (text, expected) in [
        ("DB_PASS=DpZUGRLbNtCRij", "DB_PASS=[REDACTED:secret]"),
        ("API_KEY=AbCdEfGhIjKlMn", "API_KEY=[REDACTED:secret]"),
        (
            "password: correcthorsebattery",
            "password: [REDACTED:secret]",
        ),
        (
            "auth_token: Authorization: Token 65d0bf976f7deb6f28d60cf2cd1be069039a9dd9",
            "auth_token: Authorization: Token [REDACTED:secret]",
        ),
    ] {
        assert_eq!(redact(text, RedactionPolicy::default()).0, expected);
    }
    // An escaped JSON document inside a command, as tool arguments hold it.
    let args = serde_json::json!({"cmd": format!("curl -d '{{\"client_secret\": \"{value}\"}}' https://auth.example.com")});
    let (clean, _) = redact(&args.to_string(), RedactionPolicy::default());
    assert!(!clean.contains(value), "{clean}");
}

#[test]
fn passwords_given_to_redis_said_as_pwd_and_twilio_keys_are_hidden() {
    let cases = [
        (
            "redis-cli -h cache.internal -a Xk2mP9qLw4Rz ping",
            "redis-cli -h cache.internal -a [REDACTED:secret] ping",
        ),
        (
            "redis-cli --pass 'hunter2 x' ping",
            "redis-cli --pass [REDACTED:secret] ping",
        ),
        ("my pwd is Tr0ub4dor3x", "my pwd is [REDACTED:secret]"),
        ("my pwd is vQmTzRbKpLwX", "my pwd is [REDACTED:secret]"),
        (
            "twilio SK0123456789abcdef0123456789abcdef ok",
            "twilio [REDACTED:secret] ok",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(
            redact(text, RedactionPolicy::default()).0,
            expected,
            "{text}"
        );
    }
}

#[test]
fn names_that_only_contain_a_credential_word_keep_their_value() {
    let text = r#"{"max_tokens": 4096, "token_count": 123456789, "prompt_tokens": 52000123, "tokenizer": "o200k_base_v2"}
        \"max_tokens\": 409612345, token_type: Bearer, bypass: enabled_everywhere, monkey: banana123456,
        sort_key: "a1", primary_key=True, password_hash: "$2b$12$abc", PWD=/home/agent/project,
        "pwd": "/srv/app", OLDPWD=~/work, my pwd is /home/agent, secret: false, "token": "string",
        keyboard: qwerty12345, the password is incorrect, the password field is required
        authConfig.OPENAI_API_KEY = env.OPENAI_API_KEY; apiKey: isLiteLLM ? x : y,
        env.apiKey = process.env.CODEMIE_API_KEY; const ssoCredentials = context.credentials as T
        apiKey: 'proxy-handled', CODEMIE_API_KEY: 'test-key', apiKey: 'REDACTED_API_KEY',
        password = config.db.password, env.CODEMIE_API_KEY = apiKeyValue"#;
    assert_eq!(redact(text, RedactionPolicy::default()).0, text);
    // A name that is no credential's still shows a credential by its shape.
    assert_eq!(
        redact(
            "token_count: sk-ant-api03-abcdefghijklmnopqrstu",
            RedactionPolicy::default()
        )
        .0,
        "token_count: [REDACTED:secret]"
    );
}

#[test]
fn a_secret_named_once_is_hidden_wherever_the_text_repeats_it() {
    let text = "export PGPASSWORD=Xy7-kQ2-staging\npsql -W Xy7-kQ2-staging -h db\n\
                the password is Blue-Falcon-1984 and Blue-Falcon-1984 it stays";
    let (clean, found) = redact(text, RedactionPolicy::default());
    assert_eq!(
        clean,
        "export PGPASSWORD=[REDACTED:secret]\npsql -W [REDACTED:secret] -h db\n\
         the password is [REDACTED:secret] and [REDACTED:secret] it stays"
    );
    assert_eq!(found.secrets, 4);
}

#[test]
fn social_security_and_bank_account_numbers_are_personal_data() {
    let text = "SSN 123-45-6789, IBAN GB82 WEST 1234 5698 7654 32 or DE89370400440532013000.";
    let (clean, _) = redact(text, RedactionPolicy::default());
    assert_eq!(
        clean,
        "SSN [REDACTED:ssn], IBAN [REDACTED:iban] or [REDACTED:iban]."
    );
    let lookalikes = "area 000-12-3456, range 2024-01-15, part 123-45-67890, \
                      account GB82WEST12345698765433, ISO CODE AB12CDEF";
    assert_eq!(redact(lookalikes, RedactionPolicy::default()).0, lookalikes);
}

#[test]
fn timestamps_ids_hashes_and_options_are_not_personal_data() {
    // 1700000000129 and 1712345678907 pass the Luhn check.
    let text = "wrote log-1700000000129.txt and trace_1712345678907.json at ts 1700000000129; \
                uuid 550e8400-e29b-41d4-a716-446655440000, \
                sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, \
                git 3f9d2c1b7a5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c, docker run -u 1000:1000 img, \
                git push -u origin main, mysql -h db -P 3306 -p, Authorization: required";
    assert_eq!(redact(text, RedactionPolicy::default()).0, text);
    let (clean, found) = redact(
        "card 4111 1111 1111 1111, 5555-5555-5555-4444 and 378282246310005.",
        RedactionPolicy::default(),
    );
    assert_eq!(
        clean,
        "card [REDACTED:card], [REDACTED:card] and [REDACTED:card]."
    );
    assert_eq!(found.cards, 3);
}

#[test]
fn personal_data_can_be_kept_but_secrets_never() {
    let policy = RedactionPolicy {
        emails: false,
        phones: false,
        cards: false,
        ssns: false,
        ibans: false,
    };
    let (clean, _) = redact(
        "ada@lovelace.org sk-ant-api03-abcdefghijklmnopqrstu",
        policy,
    );
    assert_eq!(clean, "ada@lovelace.org [REDACTED:secret]");
}
