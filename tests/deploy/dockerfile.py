"""The Dockerfile read as its stages: each stage's instructions, and what a stage gets from
the stage it is built on (CMD, USER, EXPOSE), as docker build resolves them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

_FROM = re.compile(r"^(?P<image>\S+)(?:\s+AS\s+(?P<name>\S+))?$", re.IGNORECASE)


@dataclass(frozen=True)
class Instruction:
    keyword: str
    """Upper case: ``RUN``, ``CMD``…"""
    arguments: str


@dataclass
class Stage:
    name: str
    base: str
    """An image, or the name of an earlier stage."""
    instructions: list[Instruction] = field(default_factory=list)

    def last(self, keyword: str) -> Instruction | None:
        found = [i for i in self.instructions if i.keyword == keyword]
        return found[-1] if found else None


@dataclass(frozen=True)
class Dockerfile:
    stages: dict[str, Stage]
    """By name, in the file's order."""

    @classmethod
    def read(cls, path: Path) -> Dockerfile:
        stages: dict[str, Stage] = {}
        current: Stage | None = None
        for keyword, arguments in _instructions(path.read_text()):
            if keyword == "FROM":
                match = _FROM.match(arguments.replace("--platform=$BUILDPLATFORM ", ""))
                if match is None:
                    raise ValueError(f"cannot read FROM {arguments}")
                name = match["name"] or f"stage-{len(stages)}"
                current = stages[name] = Stage(name, match["image"])
            elif current is not None:
                current.instructions.append(Instruction(keyword, arguments))
        return cls(stages)

    def chain(self, name: str) -> list[Stage]:
        """The stage and those it is built on, nearest first."""
        stages = [self.stages[name]]
        while stages[-1].base in self.stages:
            stages.append(self.stages[stages[-1].base])
        return stages

    def cmd(self, name: str) -> list[str] | None:
        """The stage's CMD in exec form (a JSON list), its own or inherited."""
        for stage in self.chain(name):
            instruction = stage.last("CMD")
            if instruction is not None:
                command = json.loads(instruction.arguments)
                if not (isinstance(command, list) and all(isinstance(a, str) for a in command)):
                    raise ValueError(f"stage {name}: CMD is not in exec form")
                return command
        return None

    def user(self, name: str) -> str | None:
        for stage in self.chain(name):
            instruction = stage.last("USER")
            if instruction is not None:
                return instruction.arguments
        return None

    def exposed(self, name: str) -> set[int]:
        ports: set[int] = set()
        for stage in self.chain(name):
            for instruction in stage.instructions:
                if instruction.keyword == "EXPOSE":
                    ports.update(int(port.split("/")[0]) for port in instruction.arguments.split())
        return ports

    def process_kinds(self, runtime: str = "runtime") -> dict[str, list[str]]:
        """The stages built on ``runtime`` that name a command of their own: the image's
        process kinds, by name, with their commands."""
        kinds: dict[str, list[str]] = {}
        for name, stage in self.stages.items():
            if stage.base == runtime and stage.last("CMD") is not None:
                command = self.cmd(name)
                assert command is not None
                kinds[name] = command
        return kinds


def _instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: continuation lines joined, comments and blank
    lines left out (a comment line inside a continued instruction too, as docker does)."""
    found: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        found.append((keyword.upper(), arguments.strip()))
    return found
