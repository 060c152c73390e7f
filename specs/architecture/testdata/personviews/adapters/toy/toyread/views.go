package toyread

// messageJSON names its author by id without declaring it: the person-view check reports
// userId and reviewer, not the declared author or the plain text.
type messageJSON struct {
	ID       string `json:"id"`
	UserID   string `json:"userId"`
	Author   string `json:"author" person:"login"`
	Reviewer string `json:"reviewer"`
	Text     string `json:"text"`
}
