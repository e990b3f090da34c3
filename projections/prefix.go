package projections

import "strings"

// IDsWithPrefix returns the ids of the rows under rowPrefix
// (SessionPrefix, CommandPrefix) that begin with prefix, in key order, at
// most max of them (ask for one more than you show to know there are
// more). An id that is a row's whole id is among them. It reads one
// snapshot; the error is the store's.
func (s *Store) IDsWithPrefix(rowPrefix, prefix string, max int) ([]string, error) {
	sn, err := s.Snapshot()
	if err != nil {
		return nil, err
	}
	defer sn.Close()
	var ids []string
	err = sn.scanAfter(rowPrefix+prefix, "", func(key string, _ []byte) (bool, error) {
		id := strings.TrimPrefix(key, rowPrefix)
		if strings.Contains(id, "/") {
			return true, nil // a row below another's key, not an id
		}
		ids = append(ids, id)
		return len(ids) < max, nil
	})
	return ids, err
}
