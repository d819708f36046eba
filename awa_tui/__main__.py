from awa_tui.entry import main

main()
