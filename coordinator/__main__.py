"""`python -m coordinator serve [FILE.properties] [--override name=value ...]` (as kafka-server-start)."""

from __future__ import annotations

import argparse
import sys

from .config import SETTINGS, Config, ConfigError, env_name


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m coordinator", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve", help="run the server",
        epilog="settings: " + ", ".join(f"{name} (${env_name(name)})" for name in SETTINGS),
    )
    serve.add_argument("properties", nargs="?", help="a Kafka-style .properties file")
    serve.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                       help="set a property; beats the file and the environment")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .log_setup import configure_logging

    overrides: dict[str, str] = {}
    for item in args.override:
        name, sep, value = item.partition("=")
        if not sep:
            print(f"error: --override {item!r} is not NAME=VALUE", file=sys.stderr)
            return 2
        overrides[name.strip()] = value
    warnings: list[str] = []
    try:
        config = Config.load(args.properties, overrides, warn=warnings.append)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    configure_logging(config.log_level)
    import structlog

    log = structlog.get_logger("coordinator")
    for warning in warnings:
        log.warning(warning)
    log.info("starting", **config.as_properties())
    from .app import run

    try:
        run(config)
    except ConfigError as exc:  # e.g. meta.properties of another node
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
