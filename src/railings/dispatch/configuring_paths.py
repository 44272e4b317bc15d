"""The paths that configure later commands, and why: the tables of
:mod:`railings.dispatch.configuring` (docs/SECURITY.md lists them with their reasons).

Every name is folded (:func:`railings.dispatch.configuring.fold`): lower case.
"""

from __future__ import annotations

GIT = "git reads it to decide what to run (configuration, hooks, filters)"
SHELL = "a shell or direnv runs it, or sets the environment of what runs"
BUILD = "a build or test tool runs the commands it names"
PYTHON = "Python runs it at startup or on import by its test tools"
NODE = "npm, yarn or node run what it names"
RUST = "cargo builds and runs it, or reads its configuration from it"
EDITOR = "an editor or dev container runs the tasks it names"
CI = "continuous integration runs the commands it names after a push"
HOME = "tools read it from a home directory to decide what to run"
HG = "Mercurial reads it to decide what to run (hooks, extensions)"
TASKS = "a task runner, container or language tool runs the commands it names"
ON_PATH = "it is in a directory on the commands' PATH, so it can stand in for a command"

# Directories anywhere in the path: everything below them configures commands.
DIRECTORIES: dict[tuple[str, ...], str] = {
    (".git",): GIT,
    (".husky",): GIT,
    (".githooks",): GIT,
    (".hg",): HG,
    (".vscode",): EDITOR,
    (".idea",): EDITOR,
    (".devcontainer",): EDITOR,
    (".github", "workflows"): CI,
    (".github", "actions"): CI,
    (".circleci",): CI,
    (".buildkite",): CI,
    (".cargo",): RUST,
    (".mvn",): BUILD,
    (".gradle",): BUILD,
    ("gradle", "wrapper"): BUILD,
    ("node_modules",): NODE,
    (".yarn",): NODE,
    (".venv",): PYTHON,
    (".tox",): PYTHON,
    (".nox",): PYTHON,
    (".ipython",): PYTHON,
    ("__pycache__",): PYTHON,
    (".mise",): SHELL,
    (".direnv",): SHELL,
    (".ssh",): HOME,
    (".config",): HOME,
    (".aws",): HOME,
    (".kube",): HOME,
    (".local", "bin"): HOME,
}

# File names anywhere in the tree.
NAMES: dict[str, str] = {
    # git: a file named .git points git at another repository; HEAD makes a directory one
    ".gitattributes": GIT,
    ".gitmodules": GIT,
    ".gitconfig": GIT,
    "head": GIT,
    ".lfsconfig": GIT,
    ".pre-commit-config.yaml": GIT,
    ".pre-commit-hooks.yaml": GIT,
    # git reads these from whatever directory a ".git" file or GIT_DIR names, so a
    # repository directory assembled under another name asks from its first file
    "config": GIT,
    "config.worktree": GIT,
    "commondir": GIT,
    # git hook managers: the hook they install runs what these name on every commit
    "lefthook.yml": GIT,
    "lefthook.yaml": GIT,
    ".lefthook.yml": GIT,
    ".lefthook.yaml": GIT,
    "lefthook-local.yml": GIT,
    "lefthook-local.yaml": GIT,
    ".lefthook-local.yml": GIT,
    ".lefthook-local.yaml": GIT,
    ".lintstagedrc": GIT,
    ".lintstagedrc.json": GIT,
    ".lintstagedrc.yaml": GIT,
    ".lintstagedrc.yml": GIT,
    ".lintstagedrc.js": GIT,
    ".lintstagedrc.cjs": GIT,
    ".lintstagedrc.mjs": GIT,
    "lint-staged.config.js": GIT,
    "lint-staged.config.cjs": GIT,
    "lint-staged.config.mjs": GIT,
    # Mercurial
    ".hgrc": HG,
    "hgrc": HG,
    # shells and environment loaders
    ".envrc": SHELL,
    ".env": SHELL,
    ".profile": SHELL,
    ".bashrc": SHELL,
    ".bash_profile": SHELL,
    ".bash_login": SHELL,
    ".bash_logout": SHELL,
    ".bash_aliases": SHELL,
    ".zshrc": SHELL,
    ".zshenv": SHELL,
    ".zprofile": SHELL,
    ".zlogin": SHELL,
    ".zlogout": SHELL,
    ".kshrc": SHELL,
    ".mkshrc": SHELL,
    ".cshrc": SHELL,
    ".tcshrc": SHELL,
    ".login": SHELL,
    ".logout": SHELL,
    "config.fish": SHELL,
    ".mise.toml": SHELL,
    "mise.toml": SHELL,
    # make and other build tools
    "makefile": BUILD,
    "gnumakefile": BUILD,
    "justfile": BUILD,
    ".justfile": BUILD,
    "taskfile.yml": BUILD,
    "taskfile.yaml": BUILD,
    "rakefile": BUILD,
    "gemfile": BUILD,
    "cmakelists.txt": BUILD,
    "cmakepresets.json": BUILD,
    "meson.build": BUILD,
    "build.gradle": BUILD,
    "build.gradle.kts": BUILD,
    "settings.gradle": BUILD,
    "settings.gradle.kts": BUILD,
    "gradlew": BUILD,
    "gradle.properties": BUILD,
    "pom.xml": BUILD,
    "mvnw": BUILD,
    "build": BUILD,
    "build.bazel": BUILD,
    "workspace": BUILD,
    "workspace.bazel": BUILD,
    "module.bazel": BUILD,
    ".bazelrc": BUILD,
    "flake.nix": BUILD,
    "shell.nix": BUILD,
    "default.nix": BUILD,
    # Python
    "pyproject.toml": PYTHON,
    "setup.py": PYTHON,
    "setup.cfg": PYTHON,
    "tox.ini": PYTHON,
    "noxfile.py": PYTHON,
    "conftest.py": PYTHON,
    "pytest.ini": PYTHON,
    "sitecustomize.py": PYTHON,
    "usercustomize.py": PYTHON,
    "pyvenv.cfg": PYTHON,
    "pipfile": PYTHON,
    "tox.toml": PYTHON,
    ".pytest.ini": PYTHON,
    "pytest.toml": PYTHON,
    ".pytest.toml": PYTHON,
    ".pylintrc": PYTHON,
    "pylintrc": PYTHON,
    ".pylintrc.toml": PYTHON,
    "pylintrc.toml": PYTHON,
    "mypy.ini": PYTHON,
    ".mypy.ini": PYTHON,
    ".coveragerc": PYTHON,
    "hatch.toml": PYTHON,
    "pixi.toml": PYTHON,
    "tasks.py": PYTHON,
    ".pythonrc.py": PYTHON,
    # Node
    "package.json": NODE,
    ".npmrc": NODE,
    ".yarnrc": NODE,
    ".yarnrc.yml": NODE,
    ".pnpmfile.cjs": NODE,
    ".pnpmfile.mjs": NODE,
    ".pnp.cjs": NODE,
    ".pnp.loader.mjs": NODE,
    "bunfig.toml": NODE,
    "deno.json": NODE,
    "deno.jsonc": NODE,
    "pnpm-workspace.yaml": NODE,
    # other task runners, containers and languages
    "taskfile.dist.yml": TASKS,
    "taskfile.dist.yaml": TASKS,
    "composer.json": TASKS,
    "vagrantfile": TASKS,
    "procfile": TASKS,
    "compose.yaml": TASKS,
    "compose.yml": TASKS,
    "docker-compose.yml": TASKS,
    "docker-compose.yaml": TASKS,
    "mix.exs": TASKS,
    "makefile.pl": TASKS,
    "build.pl": TASKS,
    "cpanfile": TASKS,
    ".irbrc": TASKS,
    ".rprofile": TASKS,
    # Rust
    "cargo.toml": RUST,
    "build.rs": RUST,
    "rust-toolchain": RUST,
    "rust-toolchain.toml": RUST,
    # continuous integration at the top of a repository
    ".gitlab-ci.yml": CI,
    ".travis.yml": CI,
    "jenkinsfile": CI,
    "azure-pipelines.yml": CI,
    # read from a home directory (a working directory that is, or holds, one)
    ".gdbinit": HOME,
    ".lldbinit": HOME,
    ".tmux.conf": HOME,
    ".psqlrc": HOME,
    ".vimrc": HOME,
    ".exrc": HOME,
    ".inputrc": HOME,
    ".wgetrc": HOME,
    ".curlrc": HOME,
}

# The last two parts of the path: a file of this name in a directory of that name.
PAIRS: dict[tuple[str, str], str] = {
    ("info", "attributes"): GIT,  # a repository directory's own .gitattributes
}

# The hooks git runs (githooks(5)): one of these in any directory named "hooks" asks,
# so hooks written before the rest of a repository directory are seen.
GIT_HOOKS = frozenset(
    {
        "applypatch-msg",
        "pre-applypatch",
        "post-applypatch",
        "pre-commit",
        "pre-merge-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "pre-rebase",
        "post-checkout",
        "post-merge",
        "pre-push",
        "pre-receive",
        "update",
        "proc-receive",
        "post-receive",
        "post-update",
        "reference-transaction",
        "push-to-checkout",
        "pre-auto-gc",
        "post-rewrite",
        "sendemail-validate",
        "fsmonitor-watchman",
        "p4-changelist",
        "p4-prepare-changelist",
        "p4-post-changelist",
        "p4-pre-submit",
        "post-index-change",
    }
)

# Name endings anywhere in the tree.
SUFFIXES: dict[str, str] = {
    ".pth": PYTHON,  # site runs every "import" line of a .pth file at startup
    ".pyc": PYTHON,
    ".mk": BUILD,
    ".bzl": BUILD,
    ".cmake": BUILD,
}
