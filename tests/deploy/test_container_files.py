"""The Dockerfile, compose.yaml and .dockerignore say what docs/deployment.md promises."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.deploy.containers import (
    DOCKERIGNORE,
    ROOT,
    MissingVariable,
    compose_raw,
    environment_of,
    exec_form,
    final_stage,
    healthcheck_command,
    instructions,
    interpolate,
)

# What a `.env` beside compose.yaml would give (deploy.env.example names them).
ENV = {"CLOUDADMIN_SECRET_KEY": "k" * 48, "POSTGRES_PASSWORD": "pg", "RABBITMQ_PASSWORD": "mq"}
CLOUDADMIN_SERVICES = ("migrate", "api", "worker")


def compose() -> dict:
    return interpolate(compose_raw(), ENV)


def services() -> dict:
    return compose()["services"]


def named(name: str) -> list[str]:
    return [i.value for i in final_stage() if i.name == name]


class TestDockerfile:
    def test_is_multi_stage_with_a_build_stage(self):
        froms = [i.value for i in instructions() if i.name == "FROM"]
        assert len(froms) >= 2, froms
        assert any(v.lower().endswith(" as build") for v in froms[:-1]), froms

    def test_runtime_copies_the_environment_from_the_build_stage(self):
        copies = named("COPY")
        assert any("--from=build" in c for c in copies), copies
        # No compiler or installer run in the final stage: it only copies what was built.
        assert not [r for r in named("RUN") if "pip install" in r]

    def test_installs_from_the_lock_with_hashes(self):
        build = [i for i in instructions() if i.stage == 0]
        runs = [i.value for i in build if i.name == "RUN"]
        copies = [i.value for i in build if i.name == "COPY"]
        copied = {name for c in copies for name in c.split()[:-1]}
        assert {"requirements.lock", "requirements-build.lock"} <= copied, copies
        for lock in ("requirements.lock", "requirements-build.lock"):
            installs = [part for r in runs for part in r.split("&&") if f"-r {lock}" in part]
            assert installs and all("--require-hashes" in i for i in installs), (lock, runs)
        # The wheel is built with the locked build tools alone and adds no dependency.
        assert any("--no-build-isolation" in r and "pip wheel" in r for r in runs), runs
        assert any("install --no-deps" in r and ".whl" in r for r in runs), runs

    def test_final_user_is_not_root(self):
        users = named("USER")
        assert users, "the final stage sets no USER (runs as root)"
        user = users[-1].split(":")[0]
        assert user not in {"root", "0"}, users

    def test_healthcheck_asks_healthz_without_curl(self):
        checks = named("HEALTHCHECK")
        assert len(checks) == 1, checks
        command = healthcheck_command(checks[0])
        assert command[:2] == ["python", "-c"], command
        compile(command[2], "<healthcheck>", "exec")  # a typo would make it always fail
        assert "urllib.request" in command[2]
        assert "http://127.0.0.1:8000/healthz" in command[2]

    def test_exposes_the_port_serve_listens_on(self):
        assert named("EXPOSE") == ["8000"]

    def test_runs_cloudadmin_serve_on_every_interface_by_default(self):
        assert exec_form(named("ENTRYPOINT")[-1]) == ["cloudadmin"]
        assert exec_form(named("CMD")[-1]) == ["serve", "--host", "0.0.0.0"]


class TestDockerignore:
    @pytest.mark.parametrize("entry", [".venv", ".git", "tests", "**/__pycache__", "*.db"])
    def test_leaves_local_state_out_of_the_context(self, entry: str):
        lines = [ln.strip() for ln in DOCKERIGNORE.read_text().splitlines()]
        assert entry in lines

    def test_keeps_what_the_build_copies(self):
        lines = {ln.strip() for ln in DOCKERIGNORE.read_text().splitlines()}
        copied = {
            "requirements.lock",
            "requirements-build.lock",
            "pyproject.toml",
            "README.md",
            "src",
        }
        assert not copied & lines


class TestComposeServices:
    def test_starts_the_databases_the_api_and_a_worker(self):
        assert {"postgres", "rabbitmq", "redis", *CLOUDADMIN_SERVICES} <= set(services())

    @pytest.mark.parametrize("name", CLOUDADMIN_SERVICES)
    def test_cloudadmin_services_run_the_image_of_the_dockerfile(self, name: str):
        service = services()[name]
        assert service["build"] == "."
        assert service["image"] == services()["api"]["image"]

    def test_api_serves_with_two_workers_on_8000(self):
        api = services()["api"]
        command = api["command"]
        assert command[0] == "serve"
        assert command[command.index("--workers") + 1] == "2"
        assert command[command.index("--host") + 1] == "0.0.0.0"
        assert any(str(p).endswith(":8000") for p in api["ports"]), api["ports"]

    def test_worker_runs_worker(self):
        assert services()["worker"]["command"] == ["worker"]

    def test_migrate_runs_once(self):
        migrate = services()["migrate"]
        assert migrate["command"] == ["migrate"]
        assert migrate["restart"] == "no"

    def test_api_does_not_dispatch_while_a_worker_does(self):
        assert environment_of(services()["api"])["CLOUDADMIN_RUN_DISPATCHER"] == "false"


class TestComposeEnvironment:
    @pytest.mark.parametrize("name", CLOUDADMIN_SERVICES)
    def test_database_url_points_at_the_compose_postgres(self, name: str):
        url = urlsplit(environment_of(services()[name])["CLOUDADMIN_DATABASE_URL"])
        postgres = environment_of(services()["postgres"])
        assert url.scheme == "postgresql+asyncpg"
        assert url.hostname == "postgres"
        assert (url.username, url.password) == (
            postgres["POSTGRES_USER"],
            postgres["POSTGRES_PASSWORD"],
        )
        assert url.path == f"/{postgres['POSTGRES_DB']}"

    def test_every_cloudadmin_service_has_the_same_settings(self):
        # Database, secret key, Redis, blobs and allow-list must match (deployment.md).
        shared = (
            "CLOUDADMIN_DATABASE_URL",
            "CLOUDADMIN_SECRET_KEY",
            "CLOUDADMIN_REDIS_URL",
            "CLOUDADMIN_BLOB_DIR",
            "CLOUDADMIN_OUTBOUND_ALLOW",
        )
        raw = compose_raw()["services"]
        seen = {
            name: tuple(environment_of(raw[name]).get(k) for k in shared)
            for name in CLOUDADMIN_SERVICES
        }
        assert len(set(seen.values())) == 1, seen
        assert None not in next(iter(seen.values()))

    def test_secret_key_comes_from_the_environment_not_the_file(self):
        raw = environment_of(compose_raw()["services"]["api"])["CLOUDADMIN_SECRET_KEY"]
        assert raw.startswith("${CLOUDADMIN_SECRET_KEY:?"), raw
        assert (
            environment_of(services()["api"])["CLOUDADMIN_SECRET_KEY"]
            == ENV["CLOUDADMIN_SECRET_KEY"]
        )

    def test_example_env_file_names_every_required_variable(self):
        example = (ROOT / "deploy.env.example").read_text().splitlines()
        names = {ln.split("=", 1)[0] for ln in example if ln and not ln.startswith("#")}
        assert names == set(ENV)
        with pytest.raises(MissingVariable):  # ENV is all compose.yaml needs, and needed
            interpolate(compose_raw(), {})
        assert ".env" in (ROOT / ".gitignore").read_text().splitlines()

    @pytest.mark.parametrize("missing", sorted(ENV))
    def test_refuses_to_start_without_a_secret(self, missing: str):
        env = {k: v for k, v in ENV.items() if k != missing}
        with pytest.raises(MissingVariable, match=missing):
            interpolate(compose_raw(), env)

    def test_outbound_allow_lets_the_networks_broker_through(self):
        allowed = environment_of(services()["api"])["CLOUDADMIN_OUTBOUND_ALLOW"].split(",")
        assert "rabbitmq" in [a.strip() for a in allowed]

    def test_redis_url_points_at_the_compose_redis(self):
        url = urlsplit(environment_of(services()["api"])["CLOUDADMIN_REDIS_URL"])
        assert (url.scheme, url.hostname) == ("redis", "redis")

    def test_blob_dir_is_a_volume_shared_by_the_processes(self):
        blob_dir = environment_of(services()["api"])["CLOUDADMIN_BLOB_DIR"]
        for name in ("api", "worker"):
            volumes = services()[name]["volumes"]
            assert any(v.endswith(f":{blob_dir}") for v in volumes), (name, volumes)


class TestComposeStartOrder:
    @pytest.mark.parametrize("name", ["postgres", "rabbitmq", "redis", "api"])
    def test_servers_have_healthchecks(self, name: str):
        check = services()[name]["healthcheck"]
        assert check["test"][0] == "CMD" and not check.get("disable")

    def test_api_healthcheck_is_the_images(self):
        image = healthcheck_command(named("HEALTHCHECK")[0])
        assert services()["api"]["healthcheck"]["test"][1:] == image

    def test_migrate_waits_for_a_healthy_postgres(self):
        assert services()["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"

    @pytest.mark.parametrize("name", ["api", "worker"])
    def test_processes_wait_for_the_migration_and_the_servers(self, name: str):
        depends = services()[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"
        for server in ("postgres", "rabbitmq", "redis"):
            assert depends[server]["condition"] == "service_healthy", (name, server)
