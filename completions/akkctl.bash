# akkctl.bash - bash completion for akkctl (installed by `make install` into
# PREFIX/share/bash-completion/completions/akkctl).
#
# The commands come from `akkctl --help`, each command's options from
# `akkctl COMMAND --help`, so this file never lists them itself; operands
# complete as file names (.yaml configs, run directories, data files).
_akkctl()
{
	local cur prev words cword
	_init_completion 2>/dev/null || {
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD-1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	}
	local prog=${words[0]} cmd=
	local i
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-*) ;;
		*) cmd=${words[i]}; break ;;
		esac
	done
	if [ -z "$cmd" ]; then
		local cmds
		cmds=$("$prog" --help 2>/dev/null | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
		COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
		return
	fi
	case $cur in
	-*)
		local opts
		opts=$("$prog" "$cmd" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		;;
	*)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	esac
}
complete -F _akkctl akkctl ./akkctl
