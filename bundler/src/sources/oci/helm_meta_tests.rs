//! Tests of Chart.yaml as Helm reads it: the config bytes, Go's number
//! and escape rules, Helm's refusals, the bounds.

use super::*;

#[test]
fn the_config_is_helm_s_json_of_the_metadata() {
    let m = read(
        "apiVersion: v2\nname: acme\nversion: 0.1.0+b.7\nappVersion: 1.16\n\
         description: \"a <chart> & more\\tof it\"\ntype: application\nunknown: ignored\n\
         keywords: [a, 2]\nmaintainers:\n  - name: Ann\n    email: ann@example.org\n  - name: Bo\n\
         annotations:\n  z: 1\n  a: yes\n",
        None,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(m.config).unwrap(),
        r#"{"name":"acme","version":"0.1.0+b.7","description":"a \u003cchart\u003e \u0026 more of it","keywords":["a","2"],"maintainers":[{"name":"Ann","email":"ann@example.org"},{"name":"Bo"}],"apiVersion":"v2","appVersion":"1.16","annotations":{"a":"yes","z":"1"},"type":"application"}"#
    );
    assert_eq!(m.authors, "Ann (ann@example.org), Bo");
    assert_eq!(m.app_version.as_deref(), Some("1.16"));
    // A chart without apiVersion is a v1 chart, as Helm 2 wrote them.
    let m = read("name: old\nversion: 1.0.0\n", None).unwrap();
    assert!(
        String::from_utf8(m.config)
            .unwrap()
            .contains(r#""apiVersion":"v1""#)
    );
}

#[test]
fn numbers_read_as_go_formats_a_float32() {
    for (v, go) in [
        (1.16, "1.16"),
        (1.10, "1.1"),
        (1.0, "1"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (-2.5, "-2.5"),
        (0.1, "0.1"),
    ] {
        assert_eq!(go_float32(v), go, "{v}");
    }
}

#[test]
fn what_helm_refuses_is_refused_naming_the_field() {
    for (yaml, says) in [
        ("version: 1.0.0\n", "no name"),
        ("name: acme\n", "no version"),
        ("name: acme\nversion: one\n", "version \"one\""),
        ("name: acme\nversion: 1.02.0\n", ""),
        ("name: Acme\nversion: 1.0.0\n", "name \"Acme\""),
        ("name: a/b\nversion: 1.0.0\n", "name \"a/b\""),
        ("name: acme\nversion: 1.0.0-01\n", "version"),
        (
            "name: [a]\nversion: 1.0.0\n",
            "name: expected text, found a list",
        ),
        (
            "name: acme\nversion: 1.0.0\ntype: other\n",
            "type \"other\"",
        ),
        (
            "name: acme\nversion: 1.0.0\ndeprecated: maybe\n",
            "deprecated",
        ),
        ("- a\n- b\n", "not a mapping"),
        ("name: acme\nversion: [\n", "not YAML"),
    ] {
        match read(yaml, None) {
            Err(e) => assert!(e.contains(says), "{yaml:?}: {e}"),
            // Masterminds' loose parse takes 1.02.0 (a leading zero is
            // coerced), as Helm does.
            Ok(m) => assert_eq!(
                (yaml, m.version.as_str()),
                ("name: acme\nversion: 1.02.0\n", "1.02.0")
            ),
        }
    }
    for ok in ["v1.2", "1", "1.2.3-rc.1+build.7", "1.2.3-0"] {
        assert!(check_version(ok).is_ok(), "{ok}");
    }
}

#[test]
fn aliases_and_depth_are_bounded() {
    let mut laughs = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 0..8 {
        let (p, n) = (format!("{}", (b'a' + i) as char), (b'a' + i + 1) as char);
        laughs.push_str(&format!(
            "{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        ));
    }
    let e = read(&format!("name: acme\nversion: 1.0.0\n{laughs}"), None).unwrap_err();
    assert!(e.contains("more than 100000 values"), "{e}");
    let deep = format!(
        "name: acme\nversion: 1.0.0\nx: {}{}\n",
        "[".repeat(100),
        "]".repeat(100)
    );
    let e = read(&deep, None).unwrap_err();
    assert!(e.contains("deeper than 64"), "{e}");
    // A few aliases are fine.
    let m = read("name: acme\nversion: &v 1.0.0\nappVersion: *v\n", None).unwrap();
    assert_eq!(m.app_version.as_deref(), Some("1.0.0"));
}

#[test]
fn sanitize_is_helm_s() {
    assert_eq!(sanitize("a\tb\nc\u{a0}d\u{200b}e\u{7}f"), "a b c def");
}

#[test]
fn requirements_yaml_is_read_into_the_metadata_after_chart_yaml() {
    let m = read(
        "apiVersion: v1\nname: old\nversion: 1.0.0\n",
        Some("dependencies:\n  - name: redis\n    version: 10.x.x\n    repository: https://charts.example\n    enabled: true\n    import-values: [{child: a, parent: b}]\n"),
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(m.config).unwrap(),
        r#"{"name":"old","version":"1.0.0","apiVersion":"v1","dependencies":[{"name":"redis","version":"10.x.x","repository":"https://charts.example","enabled":true,"import-values":[{"child":"a","parent":"b"}]}]}"#
    );
    let e = read("name: old\nversion: 1.0.0\n", Some("[1]")).unwrap_err();
    assert!(e.contains("requirements.yaml: it is not a mapping"), "{e}");
}
