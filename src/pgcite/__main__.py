from pgcite.cli.main import main

main()
