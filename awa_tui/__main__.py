from awa_tui.cli import main

main()
