" Vim syntax file for physc's .phys language (editors/vim: copy or link syntax/ and ftdetect/
" into ~/.vim, or add this folder to 'runtimepath'). The keywords are lang/lexer.re's, the
" functions compiler/eval.c's builtins table.
if exists("b:current_syntax")
  finish
endif

syn keyword physDecl anchor body const fn learned let model param system
syn keyword physControl for import in return sum
syn keyword physKeyword axis coordinates data eval force init inverse joint link potential tether to train length
syn keyword physConstant pi dim origin
syn keyword physBuiltin sin cos tan asin acos atan sinh cosh tanh exp log sqrt abs sign atan2 min max clip norm dot cross len transpose outer eye zeros rotx roty rotz rot2 euler_zxz normal uniform
" the operators first: the comments and strings below win where they start
syn match physOperator "+=\|-=\|\*=\|/=\|=\|\.\.\|[-+*/^']"
syn match physNumber "\<[0-9]\+\(\.[0-9]\+\)\=\([eE][+-]\=[0-9]\+\)\=\>"
syn region physString start=+"+ skip=+\\.+ end=+"+ end=+$+ oneline
syn match physComment "//.*$" contains=@Spell
syn match physComment "#.*$" contains=@Spell
syn region physComment start="/\*" end="\*/" contains=@Spell

hi def link physDecl Type
hi def link physControl Statement
hi def link physKeyword Keyword
hi def link physConstant Constant
hi def link physBuiltin Function
hi def link physNumber Number
hi def link physString String
hi def link physComment Comment
hi def link physOperator Operator

let b:current_syntax = "phys"
