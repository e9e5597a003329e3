"""Every command's help reads as prose: a docstring's line breaks, which Typer would print
as they stand in the source, are not in the help, and no command is left without one."""

from selene_dag import cli


def test_every_command_has_help_with_one_line_paragraphs() -> None:
    commands = [c for a in (cli.app, cli.cache_app, cli.distill_app) for c in a.registered_commands]
    assert len(commands) >= 15
    for command in commands:
        assert command.help, command.callback
        for paragraph in command.help.split("\n\n"):
            assert paragraph and "\n" not in paragraph, (command.callback, paragraph)
    report = next(c for c in cli.distill_app.registered_commands if c.name == "report")
    assert report.help.split("\n\n")[1].startswith("Chunks, and how many the distilled file kept")


def test_a_flag_is_shown_without_a_type_an_option_with_one() -> None:
    from typer.testing import CliRunner

    text = CliRunner().invoke(cli.app, ["ask", "--help"], terminal_width=100).output
    answer = next(line for line in text.splitlines() if "Send the pack to the model" in line)
    budget = next(line for line in text.splitlines() if "Token budget of the pack" in line)
    assert "<bool>" not in answer and "<bool>" not in text
    assert "<int>" in budget


def test_every_command_takes_home() -> None:
    # `distill report --home X` answered "No such option" while context took it: a user
    # with two homes had to switch SELENE_HOME for some commands only.
    import inspect

    commands = [c for a in (cli.app, cli.cache_app, cli.distill_app) for c in a.registered_commands]
    without = [
        c.callback.__name__
        for c in commands
        if "home" not in inspect.signature(c.callback).parameters
    ]
    assert without == []


def test_a_command_suggested_by_a_message_names_the_home_given(tmp_path) -> None:
    # A user working with --home was told to run `selene-dag ingest PATH`, which reads
    # another home ($SELENE_HOME or ./.selene).
    from typer.testing import CliRunner

    home = tmp_path / "my home"
    runner = CliRunner()
    outcome = runner.invoke(cli.app, ["context", "--home", str(home)], env={"SELENE_HOME": ""})
    assert outcome.exit_code == 1
    assert f"`selene-dag ingest PATH --home '{home}'`" in outcome.output
    # A command naming its home already keeps it, and without --home nothing is added.
    assert "`selene-dag demo --home " in outcome.output
    assert outcome.output.count("--home") == 3, outcome.output
    other = tmp_path / "other"
    outcome = runner.invoke(cli.app, ["context"], env={"SELENE_HOME": str(other)})
    assert outcome.exit_code == 1 and "`selene-dag ingest PATH` (notes)" in outcome.output
