# Writes the .java files SWIG generated in DIR, one per line, into OUT (an add_jar "@file").
file(GLOB _sources "${DIR}/*.java")
list(SORT _sources)
string(REPLACE ";" "\n" _text "${_sources}")
file(WRITE "${OUT}" "${_text}\n")
