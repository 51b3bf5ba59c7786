from submitgen.cli import main

main()
