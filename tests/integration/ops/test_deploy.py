"""deploy/ and docker-compose.yml, checked without a Docker engine (issue #6 §7):

- the compose files validate against the compose-spec JSON schema (vendored by check-jsonschema), every memengine
  service's command parses with the real CLI, its environment variables are ones memengine reads, and what they
  mount or reference exists;
- the Dockerfile is multi-stage, runs as a non-root user, installs the pinned CPU torch first, has a health check
  on an endpoint memengine serves, and copies only paths that exist;
- the Kubernetes manifests validate (kubernetes-validate, strict) and probe /healthz and /readyz on the metrics
  port, with args the CLI accepts and Secret keys that exist;
- every NATS config passes ``nats-server -t``, and cluster-{1,2,3}.conf boot a real 3-node JetStream cluster on
  loopback that stores an R3 stream.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import nats
import pytest
import yaml
from nats.js.api import StreamConfig
from nats.js.errors import NoStreamResponseError

from memengine.engine.adapters.embedded import nats_server_binary
from memengine.engine.cli.main import app
from tests.integration import deploy_nats
from tests.paths import ROOT

pytestmark = pytest.mark.integration

DEPLOY = ROOT / "deploy"
COMPOSE_FILES = [ROOT / "docker-compose.yml", DEPLOY / "compose.cluster.yml"]
ROLES = {"projector", "query", "enricher"}


def compose_schema() -> dict[str, Any]:
    import check_jsonschema

    path = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor" / "compose-spec.json"
    return json.loads(path.read_text())


def settings_vars() -> set[str]:
    """Environment variables ``Settings.from_env`` reads (each also with ``_FILE``)."""
    names = set(re.findall(r'put\("\w+", "([A-Z0-9_]+)"', (ROOT / "engine" / "adapters" / "settings.py").read_text()))
    assert "DATABASE_URL" in names and "MEMENGINE_METRICS_PORT" in names
    return names | {n + "_FILE" for n in names} | {"HF_HUB_OFFLINE"}


def parses_with_cli(args: list[str]) -> None:
    """The command line is accepted by the real ``memengine`` CLI (parsed by click, not run)."""
    import typer.main

    cmd = typer.main.get_command(app)
    ctx = cmd.make_context("memengine", list(args), resilient_parsing=False)
    sub = cmd.get_command(ctx, args[0])
    assert sub is not None, args
    sub_ctx = sub.make_context(args[0], list(args[1:]))
    roles = set(sub_ctx.params.get("role") or [])
    assert roles <= ROLES, args


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: p.name)
def test_compose_file(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    jsonschema.validate(doc, compose_schema())
    services = doc["services"]
    assert {"nats", "postgres"} | {r for r in ROLES} <= set(services)
    base = path.parent
    known = settings_vars()
    for name, svc in services.items():
        assert "healthcheck" in svc or name in ROLES, f"{name} has no health check"
        for vol in svc.get("volumes", []):
            src = vol.split(":")[0]
            if src.startswith("."):
                assert (base / src).exists(), f"{name} mounts missing {src}"
    assert "-js" in json.dumps(services["nats"]) or "jetstream" in (DEPLOY / "nats" / "nats.conf").read_text()
    assert "/healthz" in " ".join(services["nats"]["healthcheck"]["test"])
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    conf = re.search(r"/etc/nats/([\w${}:?,= .-]+\.conf)", json.dumps(services["nats"]["command"])).group(1)
    for n in ("1", "2", "3") if "NODE" in conf else ("",):
        assert (DEPLOY / "nats" / re.sub(r"\$\{NODE[^}]*\}", n, conf)).exists(), conf
    for role in ROLES:
        svc = services[role]
        cmd = [re.sub(r"\$\{\w+:\?[^}]*\}", "0", c) for c in svc["command"]]
        assert cmd[:2] == ["up", "--json"] and cmd[cmd.index("--role") + 1] == role
        parses_with_cli(cmd)
        assert svc["depends_on"]["nats"]["condition"] == "service_healthy"
        env = svc["environment"]
        assert set(env) <= known, set(env) - known
        assert "NATS_URL" in env and ("DATABASE_URL" in env or "DATABASE_URL_FILE" in env)
        assert "healthz" in json.dumps(svc.get("healthcheck", {})) or "readyz" in json.dumps(
            svc.get("healthcheck", {})) or "HEALTHCHECK" in (DEPLOY / "Dockerfile").read_text()
        assert svc["build"]["dockerfile"] == "deploy/Dockerfile"
        for secret in svc.get("secrets", []):
            assert secret in doc["secrets"]
    # secrets come from files that are never committed
    for secret in doc["secrets"].values():
        assert secret["file"].lstrip("./").startswith(("deploy/secrets/", "secrets/"))
    ignored = (ROOT / ".gitignore").read_text()
    assert ".env" in ignored and "deploy/secrets/" in ignored


def test_compose_schema_is_not_vacuous() -> None:
    bad = {"services": {"x": {"image": "a", "ports": "not a list", "healthcheck": {"interval": 5}}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, compose_schema())


def test_dockerfile() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [ln.strip() for ln in re.sub(r"\\\n", " ", text).splitlines() if ln.strip() and not ln.startswith("#")]
    stages = [ln for ln in lines if ln.startswith("FROM ")]
    assert len(stages) >= 2 and stages[0].endswith(" AS builder")
    final = lines[lines.index(stages[-1]):]
    user = [ln.split()[1] for ln in final if ln.startswith("USER ")]
    assert user and user[-1].split(":")[0] not in ("0", "root")
    torch = next(i for i, ln in enumerate(lines) if "torch==" in ln)
    assert "torch==2.13.0" in lines[torch] and "download.pytorch.org/whl/cpu" in lines[torch]
    assert torch < next(i for i, ln in enumerate(lines) if ".whl)[" in ln)  # torch first, then memengine
    extras = re.search(r"\[([\w,-]+)\]\"", text).group(1).split(",")
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert all(re.search(rf"^{e} = \[", pyproject, re.M) for e in extras)
    # the deriver the image runs is the one measured: its English parser and multilingual encoder installed
    assert {"embed", "nlp", "embed-multilingual"} <= set(extras), extras
    for ln in lines:
        if ln.startswith("COPY ") and "--from=" not in ln:
            for src in ln.split()[1:-1]:
                assert (ROOT / src).exists(), src
    health = next(ln for ln in final if ln.startswith("HEALTHCHECK"))
    assert "/healthz" in health
    assert 'ENTRYPOINT ["memengine"]' in text and 'memengine = "memengine.engine.cli.main:main"' in pyproject
    parses_with_cli(json.loads(next(ln for ln in final if ln.startswith("CMD "))[4:]))


def k8s_docs() -> list[tuple[Path, dict[str, Any]]]:
    return [(p, d) for p in sorted((DEPLOY / "k8s").glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]


def test_k8s_manifests() -> None:
    import kubernetes_validate

    docs = k8s_docs()
    for _path, doc in docs:
        kubernetes_validate.validate(doc, "1.37.0", strict=True)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for _, doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    config = by_kind["ConfigMap"][0]["data"]
    secret = by_kind["Secret"][0]
    deployments = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in by_kind["Deployment"]}
    assert set(deployments) == ROLES
    known = settings_vars()
    assert set(config) <= known
    for role, dep in deployments.items():
        pod = dep["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        (c,) = pod["containers"]
        parses_with_cli(c["args"])
        assert c["args"][c["args"].index("--role") + 1] == role
        port = next(p["containerPort"] for p in c["ports"] if p["name"] == "metrics")
        assert str(port) == config["MEMENGINE_METRICS_PORT"]
        assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
        for env in c["env"]:
            assert env["name"] in known
            if "valueFrom" in env:  # secrets from the Secret; plain values only for what is not secret
                ref = env["valueFrom"]["secretKeyRef"]
                assert ref["name"] == secret["metadata"]["name"] and ref["key"] in secret["stringData"]
            else:
                assert set(env) == {"name", "value"} and env["name"].startswith("MEMENGINE_HTTP_"), env
    # the HTTP API (issue #12) on the query pods only: its port named http, the keys file from its own Secret,
    # a Service in front
    env_of = {role: {e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
              for role, dep in deployments.items()}
    assert [r for r, env in env_of.items() if "MEMENGINE_HTTP_PORT" in env] == ["query"]
    assert "MEMENGINE_HTTP_PORT" not in config
    query = deployments["query"]["spec"]["template"]["spec"]
    (c,) = query["containers"]
    http_port = next(p["containerPort"] for p in c["ports"] if p["name"] == "http")
    assert str(http_port) == env_of["query"]["MEMENGINE_HTTP_PORT"]
    assert env_of["query"]["MEMENGINE_HTTP_HOST"] == "0.0.0.0"
    keys_file = Path(env_of["query"]["MEMENGINE_HTTP_KEYS_FILE"])
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == str(keys_file.parent))
    volume = next(v for v in query["volumes"] if v["name"] == mount["name"])
    keys_secret = next(s for s in by_kind["Secret"] if s["metadata"]["name"] == volume["secret"]["secretName"])
    assert mount["readOnly"] and [i["path"] for i in volume["secret"]["items"]] == [keys_file.name]
    assert all(i["key"] in keys_secret["stringData"] for i in volume["secret"]["items"])
    (service,) = [s for s in by_kind["Service"] if s["metadata"]["name"] == "memengine-http"]
    assert service["spec"]["selector"] == deployments["query"]["spec"]["selector"]["matchLabels"]
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]


def test_compose_serves_the_http_api_from_the_query_service() -> None:
    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = doc["services"]
    assert [r for r in ROLES if "MEMENGINE_HTTP_PORT" in services[r]["environment"]] == ["query"]
    env = services["query"]["environment"]
    assert env["MEMENGINE_HTTP_HOST"] == "0.0.0.0" and "NATS_URL" in env  # the shared settings are kept
    port = env["MEMENGINE_HTTP_PORT"]
    assert any(str(p).endswith(f":{port}") for p in services["query"]["ports"])
    keys = env["MEMENGINE_HTTP_KEYS_FILE"]
    assert keys.startswith("/run/secrets/") and keys.rsplit("/", 1)[1] in services["query"]["secrets"]
    assert "EXPOSE" in (DEPLOY / "Dockerfile").read_text() and port in re.search(
        r"^EXPOSE (.*)$", (DEPLOY / "Dockerfile").read_text(), re.M).group(1).split()


def test_k8s_validator_is_not_vacuous() -> None:
    import kubernetes_validate

    path, dep = next((p, d) for p, d in k8s_docs() if d["kind"] == "Deployment")
    dep = json.loads(json.dumps(dep))
    dep["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] = {"not": "a port"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, "1.37.0", strict=True)


CLUSTER_ENV = {**deploy_nats.PASSWORDS, "NATS_ROUTE_PASSWORD": "route-pw-1d2c"}


@pytest.mark.parametrize("conf", sorted(p.name for p in (DEPLOY / "nats").glob("*.conf")))
def test_nats_config_is_valid(conf: str, tmp_path: Path) -> None:
    env = {**CLUSTER_ENV, **{f"NATS_ROUTE_{n}": f"nats-route://route:x@nats-{n}:6222" for n in (1, 2, 3)}}
    staged = deploy_nats.stage(conf, tmp_path, tmp_path / "js") if conf != "accounts.conf" else None
    target = staged or tmp_path / conf
    if staged is None:
        (tmp_path / conf).write_text((DEPLOY / "nats" / conf).read_text())
    ok = subprocess.run([nats_server_binary(), "-t", "-c", str(target)], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr + ok.stdout
    # every file includes the accounts: a missing password is refused, never silently empty
    short = {k: v for k, v in env.items() if k != "MEMENGINE_NATS_PASSWORD"}
    bad = subprocess.run([nats_server_binary(), "-t", "-c", str(target)], env=short, capture_output=True, text=True)
    assert bad.returncode != 0 and "MEMENGINE_NATS_PASSWORD" in bad.stderr + bad.stdout


async def test_cluster_configs_form_a_jetstream_cluster(tmp_path: Path) -> None:
    cports = {n: deploy_nats.free_port() for n in (1, 2, 3)}
    env = {**CLUSTER_ENV, **{f"NATS_ROUTE_{n}": f"nats-route://route:{CLUSTER_ENV['NATS_ROUTE_PASSWORD']}"
                                                f"@127.0.0.1:{p}" for n, p in cports.items()}}
    procs: list[deploy_nats.NatsProc] = []
    try:
        for n in (1, 2, 3):
            conf = deploy_nats.stage(f"cluster-{n}.conf", tmp_path / f"n{n}", tmp_path / f"n{n}" / "js")
            procs.append(deploy_nats.start(conf, env, extra=["--cluster", f"nats://127.0.0.1:{cports[n]}"],
                                           timeout=30, health="/healthz?js-enabled-only=true"))
        nc = await nats.connect([p.url("engine", deploy_nats.PASSWORDS["MEMENGINE_NATS_PASSWORD"]) for p in procs])
        try:
            js = nc.jetstream()
            deadline = 30.0
            while True:  # the meta leader is elected a moment after the routes connect
                try:
                    info = await js.add_stream(StreamConfig(name="R3", subjects=["mem.fact.>"], num_replicas=3))
                    break
                except Exception:  # "JetStream not ready" / no meta leader yet
                    deadline -= 0.25
                    if deadline <= 0:
                        raise
                    await asyncio.sleep(0.25)
            assert info.config.num_replicas == 3
            while True:  # and the new stream's own leader a moment after it is created (no responders until then)
                try:
                    ack = await js.publish("mem.fact.acme.t.TurnRecorded", b"{}", stream="R3")
                    break
                except NoStreamResponseError:
                    deadline -= 0.25
                    if deadline <= 0:
                        raise
                    await asyncio.sleep(0.25)
            assert ack.seq == 1
            si = await js.stream_info("R3")
            names = {si.cluster.leader, *(r.name for r in si.cluster.replicas or [])}
            assert names == {"nats-1", "nats-2", "nats-3"}, names
        finally:
            await nc.close()
    finally:
        for p in procs:
            p.stop()
