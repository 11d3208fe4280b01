; Shell: functions; `source` / `.` of another script; commands as calls (a function is
; called by name like any command).

(function_definition name: (word) @name) @definition.function

(program (variable_assignment) @field)
(program (declaration_command) @field)

(command name: (command_name (word) @_src) (#any-of? @_src "source" ".")
         argument: [(word) @import.module (string (string_content) @import.module) (raw_string) @import.module]) @import

(command name: (command_name (word) @reference.call))
